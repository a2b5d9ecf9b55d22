"""A small PySpark driver for the discovery tests: starts, runs one job, waits.

Usage: small.py --name NAME [--master M] [--stop-file PATH] [--conf key=value ...]

The master comes from --master or from spark-submit's own --master; the
UI port from --conf spark.ui.port (default 0, a random free port). It prints
"E2E app_id=<id> ui=<url>" once the SparkContext is up and "E2E ready
app_id=<id>" after its job, then stays alive until the stop file exists or
SIGTERM / SIGINT arrives, and stops the SparkContext cleanly.
"""

import argparse
import os
import signal
import sys
import threading

from pyspark.sql import SparkSession


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--name", default="sparkgate-e2e-small")
    p.add_argument("--stop-file", default="")
    p.add_argument("--master", default="")
    p.add_argument("--conf", action="append", default=[])
    args = p.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda s, f: stop.set())
    signal.signal(signal.SIGINT, lambda s, f: stop.set())

    b = (SparkSession.builder.appName(args.name)
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2"))
    if args.master:  # under spark-submit, its --master is already set
        b = b.master(args.master)
    confs = {"spark.ui.port": "0"}
    for kv in args.conf:
        k, _, v = kv.partition("=")
        confs[k] = v
    for k, v in confs.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    sc = spark.sparkContext
    print("E2E app_id=%s ui=%s" % (sc.applicationId, sc.uiWebUrl), file=sys.stderr, flush=True)
    sc.setJobDescription("small: groupBy count")
    spark.range(0, 2000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    sc.setJobDescription(None)
    print("E2E ready app_id=%s" % sc.applicationId, file=sys.stderr, flush=True)

    while not stop.is_set():
        if args.stop_file and os.path.exists(args.stop_file):
            break
        stop.wait(0.25)
    print("E2E stopping app_id=%s" % sc.applicationId, file=sys.stderr, flush=True)
    spark.stop()
    print("E2E stopped", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
