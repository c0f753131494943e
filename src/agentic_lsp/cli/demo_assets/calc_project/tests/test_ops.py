from calc.ops import add, multiply


def test_add():
    assert add(2, 3) == 5


def test_add_negative_numbers():
    assert add(-2, -3) == -5


def test_multiply():
    assert multiply(4, 3) == 12


def test_add_identity():  # passes with the bug too: a wrong fix can break it
    assert add(-4, 0) == -4
