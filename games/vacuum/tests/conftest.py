"""robot_vacuum's tests: the fixture folder holds a stand-in of the official code package (its train_test.py is
the platform's script, not a test module)."""

collect_ignore = ["fixtures"]
