"""A small PySpark driver for scripts/bench.sh: runs a few jobs, prints its
UI URL and app id; when the run file appears, has as many jobs running as
it says (--running when it is empty), jobs whose tasks sleep (so that its
jobs page lists them, each with a kill control), and prints "BENCH running
jobs=N"; a larger number written to the file later starts more. It idles
until the stop file appears or --max-seconds pass, so that its UI can be
load-tested. Started with spark-submit and spark.ui.port=0 (any free
port)."""
import argparse
import os
import sys
import threading
import time

from pyspark.sql import SparkSession

p = argparse.ArgumentParser()
p.add_argument("--stop-file", required=True)
p.add_argument("--max-seconds", type=int, default=600)
p.add_argument("--jobs", type=int, default=6)
p.add_argument("--run-file", default="")
p.add_argument("--running", type=int, default=0)
args = p.parse_args()

spark = SparkSession.builder.appName("sparkgate-bench").getOrCreate()
sc = spark.sparkContext
sc.setLogLevel("WARN")
for i in range(args.jobs):
    sc.setJobDescription("bench job %d" % i)
    sc.parallelize(range(20000), 4).map(lambda x: (x % 17, x)).reduceByKey(lambda a, b: a + b).count()
print("BENCH ready app_id=%s ui=%s" % (sc.applicationId, sc.uiWebUrl), flush=True)


def sleeper(i):
    sc.setJobDescription("bench running job %d" % i)
    try:
        sc.parallelize(range(2), 2).map(lambda x: time.sleep(3600)).count()
    except Exception:  # cancelled by spark.stop()
        pass


def wanted():
    """How many jobs the run file asks for running: 0 until it exists."""
    if not args.run_file or not os.path.exists(args.run_file):
        return 0
    with open(args.run_file) as f:
        text = f.read().strip()
    return int(text) if text else args.running


deadline = time.time() + args.max_seconds
started = 0
while time.time() < deadline and not os.path.exists(args.stop_file):
    want = wanted()
    if want > started:
        for i in range(started, want):
            threading.Thread(target=sleeper, args=(i,), daemon=True).start()
        started = want
        time.sleep(3)
        print("BENCH running jobs=%d" % started, flush=True)
    time.sleep(0.5)
spark.stop()
print("BENCH stopped", flush=True)
sys.exit(0)
