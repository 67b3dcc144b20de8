"""The systemd user unit template that `distilld service install` renders."""
