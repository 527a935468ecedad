// The least ZooKeeper's own Java client does to read what `electop status` reads of a
// prefix (src/backend/zookeeper/read.rs, inputs.rs): `exists` of the prefix, then the tree
// under it: `getChildren` of a node, `getData` of each child, and the same again below each
// child that is persistent and has children. Every request asynchronous, all in flight at
// once on the one connection: no client reads the same nodes in fewer round trips. Nothing
// is printed but the counts and the times.
//
// Two passes in one JVM, each on a new session (connect + reads, as `status` does): the
// first pays for the JVM's warm-up, the second is the floor zk_scale compares with.
//
// Usage: Floor CONNECT PREFIX. Compiled by the bench against Debian's zookeeper.jar.

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.zookeeper.AsyncCallback;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

public class Floor {
    private final ZooKeeper zk;
    /// Requests sent and not yet answered; the read is done when it comes back to 0.
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicInteger nodes = new AtomicInteger();
    private final AtomicReference<KeeperException.Code> failed = new AtomicReference<>();
    private final CountDownLatch done = new CountDownLatch(1);

    private Floor(ZooKeeper zk) {
        this.zk = zk;
    }

    private void finish() {
        if (pending.decrementAndGet() == 0) {
            done.countDown();
        }
    }

    private void fail(int rc) {
        KeeperException.Code code = KeeperException.Code.get(rc);
        // Gone between listing and reading: as electop takes it, as if never listed.
        if (code != KeeperException.Code.NONODE) {
            failed.compareAndSet(null, code);
        }
    }

    private void list(String parent) {
        pending.incrementAndGet();
        zk.getChildren(parent, false, (AsyncCallback.ChildrenCallback) (rc, path, ctx, names) -> {
            if (rc != 0) {
                fail(rc);
            } else {
                for (String name : names) {
                    get(parent.endsWith("/") ? parent + name : parent + "/" + name);
                }
            }
            finish();
        }, null);
    }

    private void get(String node) {
        pending.incrementAndGet();
        zk.getData(node, false, (AsyncCallback.DataCallback) (rc, path, ctx, data, stat) -> {
            if (rc != 0) {
                fail(rc);
            } else {
                nodes.incrementAndGet();
                if (stat.getEphemeralOwner() == 0 && stat.getNumChildren() > 0) {
                    list(path);
                }
            }
            finish();
        }, null);
    }

    private static long pass(String connect, String prefix) throws Exception {
        long t0 = System.nanoTime();
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(connect, 10_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        try {
            connected.await();
            Floor f = new Floor(zk);
            Stat root = zk.exists(prefix, false);
            if (root == null) {
                throw new IllegalStateException("no node " + prefix);
            }
            f.list(prefix);
            f.done.await();
            if (f.failed.get() != null) {
                throw new IllegalStateException("read failed: " + f.failed.get());
            }
            long ns = System.nanoTime() - t0;
            System.out.printf("%d nodes in %.1f ms%n", f.nodes.get(), ns / 1e6);
            return ns;
        } finally {
            zk.close();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: Floor CONNECT PREFIX");
            System.exit(2);
        }
        long cold = pass(args[0], args[1]);
        long warm = pass(args[0], args[1]);
        System.out.printf("cold_ms=%.3f warm_ms=%.3f%n", cold / 1e6, warm / 1e6);
    }
}
