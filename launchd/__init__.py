"""The launchd agent template that `distilld service install --launchd` renders."""
