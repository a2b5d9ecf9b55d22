"""A PySpark driver for the end-to-end suite: fills every UI tab, then waits.

Usage: app.py --name NAME --event-dir DIR [--stop-file PATH] [--long-job]
              [--light] [--dstream] [--master URL] [--conf key=value ...]

It runs local[2] with spark.ui.port=0 and event logging on, runs a shuffle, a
cached DataFrame, a SQL join and a streaming query (rate -> memory sink), and
with --long-job a job that keeps running (so the Jobs and Stages pages show
active work). With --light it runs local[1] with a 512 MiB heap and one small
job only (no cache, SQL or stream), for tests that need many drivers at once
and only their UIs' access checks. With --dstream it also runs a DStream
StreamingContext (the Streaming tab). It then stays alive until the stop file exists or SIGTERM /
SIGINT arrives, and stops the SparkContext cleanly so the event log is
complete. With --master (e.g. yarn, under spark-submit) it runs there
instead of local[N]. Extra confs may also come from the env var SPARK_E2E_CONFS, a JSON
object of key -> value.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def parse_args(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--name", default="sparkgate-e2e")
    p.add_argument("--event-dir", required=True)
    p.add_argument("--stop-file", default="")
    p.add_argument("--long-job", action="store_true")
    p.add_argument("--light", action="store_true",
                   help="local[1], small heap, one small job, no stream")
    p.add_argument("--master", default="",
                   help="master to run on (e.g. yarn) instead of local[N]")
    p.add_argument("--batches", type=int, default=3,
                   help="streaming batches to wait for before reporting ready")
    p.add_argument("--dstream", action="store_true",
                   help="also run a DStream StreamingContext (queueStream, one batch every 5 s) for the Streaming tab")
    p.add_argument("--workload", default="",
                   help="run only these diagnosis workloads, comma-separated (see run_workload), instead of the batch jobs and stream")
    p.add_argument("--conf", action="append", default=[],
                   help="extra Spark conf key=value; repeatable")
    return p.parse_args(argv)


def build_session(args):
    b = (SparkSession.builder
         .appName(args.name)
         .master(args.master or ("local[1]" if args.light else "local[2]"))
         .config("spark.ui.port", "0")
         .config("spark.eventLog.enabled", "true")
         .config("spark.eventLog.dir", "file:" + os.path.abspath(args.event_dir))
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.ui.showConsoleProgress", "false"))
    confs = {}
    env = os.environ.get("SPARK_E2E_CONFS", "")
    if env:
        confs.update(json.loads(env))
    for kv in args.conf:
        k, _, v = kv.partition("=")
        confs[k] = v
    if args.light:
        # C1 only and the serial collector: less CPU while many start at once.
        b = (b.config("spark.driver.memory", "512m")
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"))
    for k, v in confs.items():
        b = b.config(k, v)
    return b.getOrCreate()


def run_batch_jobs(spark):
    sc = spark.sparkContext
    sc.setJobDescription("shuffle: groupBy count")
    df = spark.range(0, 20000).withColumn("k", F.col("id") % 17)
    df.groupBy("k").count().collect()

    sc.setJobDescription("cache: persisted range")
    cached = spark.range(0, 5000).withColumn("sq", F.col("id") * F.col("id"))
    cached = cached.persist()
    cached.count()
    cached.createOrReplaceTempView("squares")

    sc.setJobDescription("sql: join")
    spark.range(0, 1000).withColumn("k", F.col("id") % 10).createOrReplaceTempView("facts")
    spark.sql(
        "SELECT f.k, count(*) AS n, max(s.sq) AS m FROM facts f "
        "JOIN squares s ON f.id = s.id GROUP BY f.k ORDER BY f.k").collect()

    sc.setJobDescription("rdd: map reduce")
    sc.parallelize(range(1000), 4).map(lambda x: (x % 5, x)).reduceByKey(lambda a, b: a + b).collect()
    sc.setJobDescription(None)


def run_workload(spark, names):
    """Workloads for the diagnosis tests; names is a comma-separated list.

    skew: a groupBy where one hot key holds 90 % of 400,000 rows of 100
    random bytes each, so one reduce task reads most of the shuffle (about
    35 MiB against 0.5 MiB) and, as real per-row work would, takes time in
    proportion to its rows (40 us a row: about 15 s for the hot task against
    about a second for the others).
    skewjoin: a sort-merge join (no broadcast, no AQE, 8 partitions) of
    the same 400,000 rows, 90 % of them on one key, with a 101-row table;
    a Python UDF on the joined rows sleeps 100 ms every 1,000 rows of the
    hot key, so the hot reduce task reads most of the shuffle and takes
    about 36 s more than the others (which pay for the UDF's Python
    workers: a few seconds each on a busy machine).
    healthy: the same groupBy with keys spread evenly (about 2 s a task),
    then a small SQL aggregation.
    spill: a sort of 3 million random strings in 4 partitions; run with a
    small spark.memory.fraction, its tasks spill to disk.
    fail: a job whose one task raises every time.
    gc: aggregations that each hold 1 million strings per task on the
    heap (collect_list over 100 keys), repeated until the tasks have run
    75 s in all; GC-bound with a small heap and a small young generation
    (TestDiagnosis's gcConfs).
    """
    sc = spark.sparkContext
    names = set(names.split(","))
    n = 400000
    hot = "skew" in names

    def row(x):
        import os as o
        k = 0 if hot and x % 10 != 0 else x % 101
        return (k, o.urandom(100))

    def work(it):
        import time as t
        rows = 0
        size = 0
        for _, vs in it:
            for v in vs:
                rows += 1
                size += len(v)
        t.sleep(rows * 40e-6)
        yield size

    if names & {"skew", "healthy"}:
        sc.setJobDescription("diagnosis: %s groupBy" % ("skew" if hot else "healthy"))
        # Two map tasks, one wave on local[2]: a first wave that pays for
        # starting Python workers is not skew.
        sc.parallelize(range(n), 2).map(row).groupByKey(8).mapPartitions(work).collect()
    if "skewjoin" in names:
        sc.setJobDescription("diagnosis: skewed join")
        # Left as Spark 3.5/4.x would run it unaided, AQE would split the
        # hot partition; the finding is what a user sees without it.
        spark.conf.set("spark.sql.adaptive.enabled", "false")
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
        spark.conf.set("spark.sql.shuffle.partitions", "8")

        def slow(i):
            import time as t
            if i % 1000 == 1:
                t.sleep(0.1)
            return 1
        slow_udf = F.udf(slow, "int")
        big = spark.range(0, n, 1, 2).selectExpr(
            "id", "CASE WHEN id % 10 != 0 THEN 0 ELSE id % 101 END AS k", "sha2(CAST(id AS STRING), 512) AS v")
        small = spark.range(0, 101).selectExpr("id AS k", "id * 2 AS w")
        big.join(small, "k").select(F.sum(slow_udf("id")), F.sum(F.length("v"))).collect()
        for k in ("spark.sql.adaptive.enabled", "spark.sql.autoBroadcastJoinThreshold", "spark.sql.shuffle.partitions"):
            spark.conf.unset(k)
    if "healthy" in names:
        sc.setJobDescription("diagnosis: sql")
        spark.range(0, 100000).withColumn("k", F.col("id") % 8).groupBy("k").count().collect()
    if "spill" in names:
        sc.setJobDescription("diagnosis: spilling sort")
        # Written to the noop sink: a count would let the optimizer drop the sort.
        (spark.range(0, 3000000, 1, 4).selectExpr("id", "uuid() AS s")
         .sortWithinPartitions("s").write.format("noop").mode("overwrite").save())
    if "gc" in names:
        # Until the app's tasks have run 75 s in all (the diagnosis judges
        # GC over at least a minute of task time), however fast the machine:
        # a round took 3.5 s of task time on a quiet one, 30 s on a busy one.
        i = 0
        while i < 2 or (i < 60 and task_seconds(spark) < 75):
            sc.setJobDescription("diagnosis: collect_list %d" % i)
            (spark.range(0, 2000000, 1, 2).selectExpr("id % 100 AS k", "uuid() AS s")
             .groupBy("k").agg(F.collect_list("s").alias("l"))
             .selectExpr("sum(size(l))").collect())
            i += 1
    if "fail" in names:
        def boom(x):
            if x == 3:
                raise ValueError("e2e: task %d fails on purpose" % x)
            return x
        sc.setJobDescription("diagnosis: failing task")
        try:
            sc.parallelize(range(4), 4).map(boom).collect()
        except Exception:
            pass  # the failure is what the diagnosis must show
    sc.setJobDescription(None)


def task_seconds(spark):
    """The app's task time so far, from its own REST API (executors)."""
    import urllib.request
    sc = spark.sparkContext
    url = "%s/api/v1/applications/%s/allexecutors" % (sc.uiWebUrl, sc.applicationId)
    with urllib.request.urlopen(url, timeout=30) as r:
        return sum(e["totalDuration"] for e in json.load(r)) / 1000.0


def start_stream(spark, batches):
    q = (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
         .writeStream.format("memory").queryName("rate_sink")
         .trigger(processingTime="2 seconds").start())
    deadline = time.time() + 120
    while time.time() < deadline:
        p = q.lastProgress
        if p is not None and p.get("batchId", -1) + 1 >= batches:
            break
        time.sleep(0.5)
    return q


def start_dstream(spark, batches):
    """A DStream app: queueStream of small RDDs (no receiver, no socket),
    one batch every 5 s, a shuffle per batch; waits until batches batches
    have data and returns the StreamingContext (empty batches follow)."""
    from pyspark.streaming import StreamingContext
    sc = spark.sparkContext
    ssc = StreamingContext(sc, 5)
    rdds = [sc.parallelize(range(i * 100, (i + 1) * 100), 2) for i in range(batches)]
    done = []
    (ssc.queueStream(rdds, oneAtATime=True)
     .map(lambda x: (x % 5, 1)).reduceByKey(lambda a, b: a + b)
     .foreachRDD(lambda t, rdd: done.append(rdd.count())))
    ssc.start()
    deadline = time.time() + 120
    while time.time() < deadline and len([n for n in done if n > 0]) < batches:
        time.sleep(0.5)
    return ssc


def start_long_job(spark):
    def slow(x):
        import time as t
        t.sleep(3600)
        return x

    def run():
        sc = spark.sparkContext
        sc.setLocalProperty("spark.job.description", "long-running: sleeps")
        try:
            sc.parallelize(range(1), 1).map(slow).count()
        except Exception:
            pass  # cancelled at shutdown

    # One partition: the task holds one of the two local slots, the other
    # stays free for the stream's micro-batches.
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def main(argv):
    args = parse_args(argv)
    os.makedirs(args.event_dir, exist_ok=True)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    spark = build_session(args)
    sc = spark.sparkContext
    print("E2E app_id=%s ui=%s" % (sc.applicationId, sc.uiWebUrl), file=sys.stderr, flush=True)
    q = None
    if args.workload:
        run_workload(spark, args.workload)
    elif args.light:
        sc.setJobDescription("light: count")
        sc.parallelize(range(100), 1).count()
        sc.setJobDescription(None)
    else:
        run_batch_jobs(spark)
        q = start_stream(spark, args.batches)
    ssc = start_dstream(spark, args.batches) if args.dstream else None
    if args.long_job:
        start_long_job(spark)
    print("E2E ready app_id=%s" % sc.applicationId, file=sys.stderr, flush=True)

    while not stop.is_set():
        if args.stop_file and os.path.exists(args.stop_file):
            break
        stop.wait(0.5)

    print("E2E stopping app_id=%s" % sc.applicationId, file=sys.stderr, flush=True)
    if ssc is not None:
        ssc.stop(stopSparkContext=False, stopGraceFully=False)
    if q is not None:
        try:
            q.stop()
        except Exception:
            pass
    sc.cancelAllJobs()
    spark.stop()
    print("E2E stopped", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
