"""Code the TFRecord tutorial notebooks have shown, kept for reuse (imports no TensorFlow).

Modules:
    notebook     set-up of every notebook: quiet, deterministic TensorFlow; a work folder
    arrays       arrays to bytes and back with their dtype and shape (.npy) (notebook 01)
    voc          read a PASCAL VOC2012-layout folder and its annotations (notebooks 01-03, 09)
    voc_records  VOC image/mask pairs as tf.train.Example: spec, convert, read (notebooks 02, 08)
    records      the TFRecord format in pure Python: write, read, verify, detect (02, 06)
    index        read any record by number through an index of offsets (notebook 04)
    pipeline     shuffled, cropped, batched tf.data input for VOC records (notebook 03)
    plots        image/mask pairs and batches with VOC-colour overlays (notebooks 02, 03)
    memory       peak resident memory of a block of code (notebooks 03, 05)
    shuffle      seeded permutations and a uniform global shuffle with tf.data (notebook 04)
    sequences    windows of consecutive frames and SequenceExample (notebook 05)
    describe     describe the features of an unknown record file (notebook 06)
    beam         the same conversion as an Apache Beam pipeline, byte for byte (notebook 08)
    detection    VOC boxes with the Object Detection API's keys, and reading them (notebook 09)
    cli          `python -m helpers convert-voc | verify | inspect`
"""

__version__ = "0.1.0"
