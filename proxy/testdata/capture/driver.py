import threading, time, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[4]").appName("sparkgate-golden")
         .config("spark.ui.port", sys.argv[1]).config("spark.ui.showConsoleProgress", "false").config("spark.scheduler.mode", "FAIR")
         .getOrCreate())
sc = spark.sparkContext
print("APPID", sc.applicationId, flush=True)
# a finished job first, so completed tables are rendered too
sc.parallelize(range(10), 2).count()
def run():
    sc.parallelize(range(4), 4).map(lambda x: __import__('time').sleep(600)).count()
# one job that stays running, or as many as the second argument asks for
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1):
    threading.Thread(target=run, daemon=True).start()
time.sleep(900)
