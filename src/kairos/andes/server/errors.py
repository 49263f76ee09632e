"""OpenAI-shaped errors for the Andes server; the implementation is shared by every system's
server and lives in `kairos.runtime.errors`."""

from kairos.runtime.errors import (
    APIError,
    error_body,
    install_error_handlers,
    validation_error,
)

__all__ = ["APIError", "error_body", "install_error_handlers", "validation_error"]
