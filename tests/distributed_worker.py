"""One worker of tests/test_shuffle_distributed.py. It trains a tiny Keras model under
``tf.distribute.MultiWorkerMirroredStrategy`` (the cluster and this worker's place in it come
from ``TF_CONFIG``) on its share of a global shuffle, and writes as JSON what it trained on.

Each record is ``struct.pack("<qq", number, label)``. The model counts, per replica and inside
its training step, how often each record number reached it: the records ``fit`` trained on, not
the ones a pipeline read ahead. It trains twice: once on the share its ``InputContext`` names
(``"own"``), then once as a broken client in which every worker claims input pipeline 0
(``"same_share"``), so that the test can show its check fails on such a client.

    python tests/distributed_worker.py OUT.json FILE... --num-records N --global-batch G --seed S
"""

import argparse
import json
from collections.abc import Callable

import keras
import tensorflow as tf

from helpers.shuffle import global_shuffle_dataset


def parse(batch: tf.Tensor) -> tf.Tensor:
    """A batch of records as one float32 matrix of rows ``[number, label / 10, label >= 5]``
    (a record's number is exact in float32 below 2**24): the model's input and its target.

    One tensor, not ``(x, y)``: before its first step, Keras 3's ``fit`` averages a first batch
    across the workers to build the model, and this strategy's ``reduce`` takes one tensor."""
    fields = tf.cast(tf.io.decode_raw(batch, tf.int64), tf.float32)  # [batch, 2]: number, label
    return tf.concat([fields / [1, 10], tf.cast(fields[:, 1:] >= 5, tf.float32)], axis=1)


def dataset_function(args: argparse.Namespace, same_share: bool, contexts: list) -> Callable:
    """The function ``distribute_datasets_from_function`` calls once on each worker; it notes
    in ``contexts`` the ``InputContext`` the strategy gave it."""

    def make(context: tf.distribute.InputContext) -> tf.data.Dataset:
        contexts.append(context)
        if same_share:  # a broken client: every worker claims to be input pipeline 0
            context = tf.distribute.InputContext(
                context.num_input_pipelines, 0, context.num_replicas_in_sync
            )
        batch_size = context.get_per_replica_batch_size(args.global_batch)
        records = global_shuffle_dataset(
            args.files, args.seed, batch_size=batch_size, input_context=context
        )
        return records.map(parse)

    return make


def on_read_counter(shape: list[int]) -> tf.Variable:
    """An int64 variable that each replica adds to on its own (read per replica: not summed)."""
    return tf.Variable(
        tf.zeros(shape, tf.int64),
        trainable=False,
        synchronization=tf.VariableSynchronization.ON_READ,
        aggregation=tf.VariableAggregation.SUM,
    )


class CountingModel(keras.Model):
    """One sigmoid unit whose training step counts its steps and the records it is given."""

    def __init__(self, num_records: int, global_batch: int) -> None:
        super().__init__()
        self.global_batch = global_batch
        self.dense = keras.layers.Dense(1, activation="sigmoid")
        self.counters = {"steps": on_read_counter([]), "seen": on_read_counter([num_records])}

    def call(self, rows: tf.Tensor) -> tf.Tensor:
        return self.dense(rows[:, 1:2])  # the feature, not the record's number

    def train_step(self, rows: tf.Tensor) -> dict:
        numbers = tf.cast(rows[:, 0], tf.int64)
        hits = tf.scatter_nd(numbers[:, None], tf.ones_like(numbers), self.counters["seen"].shape)
        self.counters["seen"].assign_add(hits)
        self.counters["steps"].assign_add(1)
        with tf.GradientTape() as tape:
            losses = keras.losses.binary_crossentropy(rows[:, 2:], self(rows, training=True))
            loss = tf.reduce_sum(losses) / self.global_batch  # the replicas' gradients add up
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables, strict=True))
        return {"loss": loss[None]}  # fit averages the logs across the workers over axis 0


def local(strategy: tf.distribute.Strategy, variable: tf.Variable) -> int | list:
    """This worker's own value of an on-read ``variable`` (the worker has one replica)."""
    (value,) = strategy.experimental_local_results(variable)
    return value.numpy().tolist()


def train(strategy: tf.distribute.Strategy, args: argparse.Namespace, same_share: bool) -> dict:
    """One epoch of ``fit`` on this worker's share (or on input pipeline 0's), and what the
    training steps saw: their count and how often each record number reached them."""
    contexts = []
    make = dataset_function(args, same_share, contexts)
    dataset = strategy.distribute_datasets_from_function(make)
    with strategy.scope():
        model = CountingModel(args.num_records, args.global_batch)
        model.compile(optimizer=keras.optimizers.SGD(0.1))
    history = model.fit(dataset, epochs=1, shuffle=False, verbose=0)
    (context,) = contexts
    return {
        "input_pipeline_id": context.input_pipeline_id,
        "num_input_pipelines": context.num_input_pipelines,
        "num_replicas_in_sync": context.num_replicas_in_sync,
        "steps": local(strategy, model.counters["steps"]),
        "iterations": int(model.optimizer.iterations.numpy()),
        "epochs": len(history.history["loss"]),
        "seen": local(strategy, model.counters["seen"]),
    }


def main() -> None:
    """Trains on this worker's own share, then on input pipeline 0's, and writes what each
    training saw to the output file as ``{"own": ..., "same_share": ...}``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--num-records", type=int, required=True)
    parser.add_argument("--global-batch", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args()
    keras.config.disable_traceback_filtering()  # a failing worker's stderr shows where
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    keras.utils.set_random_seed(args.seed)
    found = {"own": train(strategy, args, False), "same_share": train(strategy, args, True)}
    with open(args.out, "w") as out:
        json.dump(found, out)


if __name__ == "__main__":
    main()
