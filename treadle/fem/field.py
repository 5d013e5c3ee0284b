"""Field classes of ``treadle.fem`` (the reference's ``warp.fem.field``): test, trial and restricted fields."""

from .._src.fem.field.virtual import LocalTestField as LocalTestField
from .._src.fem.field.virtual import TestField as TestField
from .._src.fem.field.virtual import TrialField as TrialField
from .._src.fem.restriction import FieldRestriction as FieldRestriction

__all__ = ["FieldRestriction", "LocalTestField", "TestField", "TrialField"]
