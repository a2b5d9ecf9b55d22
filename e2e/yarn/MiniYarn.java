// MiniYarn runs a one-node YARN cluster (Hadoop's MiniYARNCluster) for the
// sparkgate end-to-end suite: one ResourceManager and one NodeManager on
// 127.0.0.1, memory checks off, the local file system as default FS.
//
// Usage: java -cp <hadoop jars>:<dir> MiniYarn CONF_DIR WORK_DIR PORTS
//
// PORTS is five comma-separated free ports for the ResourceManager: client,
// scheduler, resource tracker, admin, web. (MiniYARNCluster gives its
// NodeManager ephemeral ports on localhost of its own.) Once the cluster is up
// it writes yarn-site.xml and core-site.xml into CONF_DIR (so HADOOP_CONF_DIR
// can point there) and prints one line
//
//	MINIYARN READY rm_web=http://127.0.0.1:<port> rm=127.0.0.1:<port> nm_web=http://<host>:<port>
//
// Each daemon's web port serves its own web app (see pinWebApps), as in a
// real cluster: the NodeManager's container log pages and REST API too.
//
// It stops the cluster when stdin closes or on SIGTERM.

import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.service.Service;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public final class MiniYarn {
  private MiniYarn() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: MiniYarn CONF_DIR WORK_DIR PORTS");
      System.exit(2);
    }
    File confDir = new File(args[0]);
    File workDir = new File(args[1]);
    String[] p = args[2].split(",");
    if (p.length != 5) {
      System.err.println("PORTS must be five comma-separated ports");
      System.exit(2);
    }
    if (!confDir.isDirectory() && !confDir.mkdirs()) {
      throw new IllegalStateException("cannot create " + confDir);
    }
    if (!workDir.isDirectory() && !workDir.mkdirs()) {
      throw new IllegalStateException("cannot create " + workDir);
    }
    String host = "127.0.0.1";

    YarnConfiguration conf = new YarnConfiguration();
    conf.set("fs.defaultFS", "file:///");
    conf.set("hadoop.tmp.dir", new File(workDir, "tmp").getAbsolutePath());
    // Fixed ports: every address is 127.0.0.1, never the machine's name.
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, true);
    conf.set(YarnConfiguration.RM_HOSTNAME, host);
    conf.set(YarnConfiguration.RM_ADDRESS, host + ":" + p[0]);
    conf.set(YarnConfiguration.RM_SCHEDULER_ADDRESS, host + ":" + p[1]);
    conf.set(YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS, host + ":" + p[2]);
    conf.set(YarnConfiguration.RM_ADMIN_ADDRESS, host + ":" + p[3]);
    conf.set(YarnConfiguration.RM_WEBAPP_ADDRESS, host + ":" + p[4]);
    // Small and lenient: no memory checks, any disk fill level.
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.setInt(YarnConfiguration.NM_PMEM_MB, 4096);
    conf.setInt(YarnConfiguration.NM_VCORES, 4);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 4096);
    // The FIFO scheduler needs no queue configuration file.
    conf.set(YarnConfiguration.RM_SCHEDULER,
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
    conf.setLong(YarnConfiguration.NM_MIN_PER_DISK_FREE_SPACE_MB, 0);
    conf.setBoolean(YarnConfiguration.TIMELINE_SERVICE_ENABLED, false);
    // Containers run the machine's Java, whatever the caller's environment.
    conf.set(YarnConfiguration.NM_ADMIN_USER_ENV,
        "MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX,JAVA_HOME=" + System.getProperty("java.home"));
    // Finished apps' local files go at once.
    conf.setInt(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 0);

    // MiniYARNCluster keeps its directories under target/<name> of the
    // working directory, which the caller sets to WORK_DIR.
    MiniYARNCluster cluster = new MiniYARNCluster("sparkgate-e2e", 1, 1, 1);
    cluster.init(conf);
    cluster.start();

    Runtime.getRuntime().addShutdownHook(new Thread(() -> stopCluster(cluster), "miniyarn-shutdown"));

    // Wait for the NodeManager to register, so apps can be scheduled at once.
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (cluster.getResourceManager().getRMContext().getRMNodes().isEmpty()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the NodeManager never registered");
      }
      Thread.sleep(100);
    }

    pinWebApps(cluster);

    Configuration eff = cluster.getConfig();
    write(eff, new File(confDir, "yarn-site.xml"));
    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", "file:///");
    core.set("hadoop.tmp.dir", eff.get("hadoop.tmp.dir"));
    write(core, new File(confDir, "core-site.xml"));

    String nmWeb = cluster.getResourceManager().getRMContext().getRMNodes().values().iterator().next().getHttpAddress();
    System.out.println("MINIYARN READY rm_web=http://" + eff.get(YarnConfiguration.RM_WEBAPP_ADDRESS)
        + " rm=" + eff.get(YarnConfiguration.RM_ADDRESS) + " nm_web=http://" + nmWeb);
    System.out.flush();

    // stdin closing (the harness went away) stops the cluster too.
    InputStream in = System.in;
    byte[] buf = new byte[256];
    while (in.read(buf) >= 0) {
      // discard
    }
    System.exit(0);
  }

  /**
   * Gives each web server of the cluster its own Guice filter pipeline.
   * Hadoop's WebApps install Guice's filter by class name, so Jetty makes
   * each server's GuiceFilter with the no-argument constructor, and such a
   * filter dispatches to one static, JVM-wide pipeline: the one of the last
   * injector created (the NodeManager's). In one JVM both ports would then
   * serve the NodeManager's web app (the RM's REST API and its /proxy/ would
   * answer with the NM's 404 page). Each WebApp keeps the filter its own
   * injector made, whose pipeline is that web app's; this copies that
   * pipeline into the filter Jetty serves with, for the ResourceManager and
   * the NodeManager alike, so each port serves its own daemon's pages as in
   * a real cluster (one daemon per JVM). A MiniYARNCluster artefact only.
   */
  private static void pinWebApps(MiniYARNCluster cluster) throws Exception {
    pinWebApp("ResourceManager", call(cluster.getResourceManager(), "getWebapp"));
    Object nmWebServer = null;
    for (Service s : cluster.getNodeManager(0).getServices()) {
      if (s.getClass().getName().equals("org.apache.hadoop.yarn.server.nodemanager.webapp.WebServer")) {
        nmWebServer = s;
      }
    }
    if (nmWebServer == null) {
      throw new IllegalStateException("the NodeManager has no WebServer service");
    }
    pinWebApp("NodeManager", field(nmWebServer.getClass(), "webApp").get(nmWebServer));
  }

  private static void pinWebApp(String daemon, Object webApp) throws Exception {
    if (webApp == null) {
      throw new IllegalStateException(daemon + " has no web app");
    }
    Object own = field(webApp.getClass(), "guiceFilter").get(webApp);
    Object pipeline = field(own.getClass(), "injectedPipeline").get(own);
    Object server = call(webApp, "httpServer");
    Object context = call(server, "getWebAppContext");
    Object handler = call(context, "getServletHandler");
    Method getFilter = handler.getClass().getMethod("getFilter", String.class);
    Object holder = getFilter.invoke(handler, "guice");
    if (holder == null) {
      throw new IllegalStateException(daemon + "'s web server has no guice filter");
    }
    Object served = call(holder, "getFilter");
    if (served == null || pipeline == null) {
      throw new IllegalStateException(daemon + "'s guice filter is not started");
    }
    field(served.getClass(), "injectedPipeline").set(served, pipeline);
  }

  private static Object call(Object o, String name) throws Exception {
    for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
      for (Method m : c.getDeclaredMethods()) {
        if (m.getName().equals(name) && m.getParameterCount() == 0) {
          m.setAccessible(true);
          return m.invoke(o);
        }
      }
    }
    throw new NoSuchMethodException(o.getClass().getName() + "." + name);
  }

  private static Field field(Class<?> cls, String name) throws NoSuchFieldException {
    for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
      try {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f;
      } catch (NoSuchFieldException e) {
        // look in the superclass
      }
    }
    throw new NoSuchFieldException(cls.getName() + "." + name);
  }

  private static void stopCluster(MiniYARNCluster cluster) {
    try {
      cluster.stop();
      System.out.println("MINIYARN STOPPED");
      System.out.flush();
    } catch (RuntimeException e) {
      System.err.println("stopping MiniYARNCluster: " + e);
    }
  }

  private static void write(Configuration conf, File f) throws Exception {
    File tmp = new File(f.getPath() + ".tmp");
    try (OutputStream out = new FileOutputStream(tmp)) {
      conf.writeXml(out);
    }
    if (!tmp.renameTo(f)) {
      throw new IllegalStateException("cannot rename " + tmp + " to " + f);
    }
  }
}
