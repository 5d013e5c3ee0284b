"""The public front: ``@kernel``/``@func``/``@struct`` declarations, modules, ``array`` and its creation, ``launch``."""
