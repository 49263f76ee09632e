"""Salus pure core and simulator: lanes, Eq. 2.1, admission, policies, driver, trends."""
