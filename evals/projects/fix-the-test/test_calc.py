from calc import add, mean


def test_add():
    assert add(2, 3) == 5


def test_mean():
    got = mean([2, 4, 6])
    assert got == 4, f"mean([2, 4, 6]) returned {got}, expected 4"


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
            print(f"ok {name}")
    print("all tests passed")
