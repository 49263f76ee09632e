"""Client side of Andes: the token pacer that releases a stream on the ideal timeline."""
