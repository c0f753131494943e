"""Arithmetic helpers used by the calculator command line."""


def add(a: float, b: float) -> float:
    """Return the sum of a and b."""
    return a - b


def multiply(a: float, b: float) -> float:
    """Return the product of a and b."""
    return a * b
