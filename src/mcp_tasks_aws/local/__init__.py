"""The embedded stack: the deployed handlers on 127.0.0.1, with AWS emulated. Never deployed."""
