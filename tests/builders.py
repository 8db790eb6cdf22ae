"""The test files' one way to build ``tf.train`` messages from plain values.

Import as ``from builders import example, feature`` (tests/ is on ``sys.path`` under pytest's
default "prepend" import mode). Plain functions rather than fixtures, because tests use them at
module level too (in parametrize tables). TensorFlow is imported on first use, so a test file
sets the quiet environment (``helpers._tensorflow.QUIET_ENVIRONMENT``) before any of them runs.
"""

LISTS = {"bytes": "BytesList", "int64": "Int64List", "float": "FloatList"}


def feature(values: object, kind: str | None = None) -> "tf.train.Feature":  # noqa: F821
    """A Feature of ``values`` (a list, or one value). ``kind`` ("bytes", "int64", "float") is
    by default that of the first value: bytes, float or int (an empty list is int64)."""
    import tensorflow as tf

    values = list(values) if isinstance(values, (list, tuple)) else [values]
    if kind is None and values and isinstance(values[0], bytes):
        kind = "bytes"
    elif kind is None and values and isinstance(values[0], float):
        kind = "float"
    elif kind is None:
        kind = "int64"
    return tf.train.Feature(**{f"{kind}_list": getattr(tf.train, LISTS[kind])(value=values)})


def as_feature(value: object) -> "tf.train.Feature":  # noqa: F821
    """``value`` if it is a Feature already, else :func:`feature` of it."""
    import tensorflow as tf

    return value if isinstance(value, tf.train.Feature) else feature(value)


def example_message(features: dict) -> "tf.train.Example":  # noqa: F821
    """An Example of ``{key: Feature or values}``."""
    import tensorflow as tf

    feature_map = {key: as_feature(value) for key, value in features.items()}
    return tf.train.Example(features=tf.train.Features(feature=feature_map))


def example(features: dict) -> bytes:
    """:func:`example_message`, serialized with sorted map keys (the same bytes every run)."""
    return example_message(features).SerializeToString(deterministic=True)


def sequence_example(context: dict, lists: dict) -> bytes:
    """A SequenceExample of ``{key: Feature or values}`` and ``{key: [Feature or values per
    step]}``, serialized with sorted map keys."""
    import tensorflow as tf

    message = tf.train.SequenceExample()
    for key, value in context.items():
        message.context.feature[key].CopyFrom(as_feature(value))
    for key, steps in lists.items():
        message.feature_lists.feature_list[key].feature.extend([as_feature(s) for s in steps])
    return message.SerializeToString(deterministic=True)
