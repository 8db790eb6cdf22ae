"""Code the TFRecord tutorial notebooks have shown, kept for reuse (imports no TensorFlow).

One module per topic; each module's docstring says what it holds and which notebooks show it
(the API reference tabulates them). ``python -m helpers`` is the command line.

The modules stand in six layers, the lowest first. A module imports only from its own layer or
a lower one, lazy imports inside functions too (tests/test_helpers_structure.py holds them to
it); a new module joins a layer here.

1. Private core: ``__init__``, ``_checks``, ``_magic``, ``_tensorflow``, ``_framing``,
   ``_commit``, ``_index_files``, ``_spans``, ``_examples``: what the modules above share and
   no notebook calls: argument checks, magic bytes, the quiet-TensorFlow environment, the
   record framing and its one check, atomic commits, the index files beside a shard, reads of
   byte spans, the protobuf messages and the keys of each kind of record.
2. Format engine: ``records``, ``index``, ``shuffle``, ``describe``, ``arrays``: TFRecord files
   in Python: write, read and verify them, index them and read any record by its number,
   shuffle record numbers (``shuffle`` also hands its order to ``tf.data``), describe what the
   records hold; arrays as ``.npy`` bytes.
3. VOC: ``voc``, ``voc_records``: a VOC2012 folder, its image/mask pairs and boxes as
   records, and a split converted into shards.
4. tf.data readers: ``pipeline``, ``sequences``: datasets of cropped VOC batches and of windows
   of consecutive frames.
5. Teaching aids: ``notebook``, ``plots``, ``memory``: a notebook's set-up, figures of images
   and masks, the peak memory of a block of code.
6. Front ends: ``cli``, ``__main__``, ``beam``: the command line, and its Apache Beam engine.
"""

__version__ = "0.1.0"
