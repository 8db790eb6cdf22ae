"""The environment that keeps TensorFlow quiet, set before it is imported: one definition for
notebook kernels (``helpers.notebook.prepare_tensorflow``), Beam's workers, scripts and tests."""

QUIET_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "3",  # C++ INFO, WARNING and ERROR lines
    "TF_ENABLE_ONEDNN_OPTS": "0",  # the oneDNN notice ignores the log level
}
