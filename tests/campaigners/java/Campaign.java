// A third-party participant of a ZooKeeper election, written the way a user of Apache Curator
// writes one: a CuratorFramework client, then either a LeaderLatch (`--recipe latch`) or a
// LeaderSelector with autoRequeue (`--recipe selector`) on one path. electop's tests start it
// to see what such a participant believes. It prints one JSON line per change of belief:
//
//   {"t_ms":1700000000000,"id":"node-a","belief":"follower"|"leader"|"lost","detail":"..."}
//
// It notices only what Curator tells it: the latch's isLeader/notLeader, the selector's
// takeLeadership (and its interruption), and the connection state (LOST once the session is
// gone). Like any Curator user it does not watch its own node once it leads.
//
// Built against Debian's libcurator-recipes-java (the jars' manifests name the rest):
//
//   javac -cp /usr/share/java/curator-recipes.jar -d <dir> Campaign.java
//   java -cp <dir>:/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-simple.jar \
//     Campaign --connect 127.0.0.1:2181 --path /election/jobs --id node-a --session-ms 3000
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class Campaign {
    private static String id = "";

    static synchronized void say(String belief, String detail) {
        String line = "{\"t_ms\":" + System.currentTimeMillis() + ",\"id\":" + quote(id)
            + ",\"belief\":" + quote(belief) + ",\"detail\":" + quote(detail) + "}\n";
        // One write per line, so a reader never sees half a belief.
        byte[] bytes = line.getBytes(StandardCharsets.UTF_8);
        System.out.write(bytes, 0, bytes.length);
        System.out.flush();
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            args.put(argv[i], argv[i + 1]);
        }
        String connect = args.getOrDefault("--connect", "127.0.0.1:2181");
        String path = args.get("--path");
        String recipe = args.getOrDefault("--recipe", "latch");
        id = args.getOrDefault("--id", "");
        int sessionMs = Integer.parseInt(args.getOrDefault("--session-ms", "3000"));
        if (path == null || id.isEmpty() || !(recipe.equals("latch") || recipe.equals("selector"))) {
            System.err.println("usage: Campaign --connect HOST:PORT --path /PATH --id ID"
                + " [--recipe latch|selector] [--session-ms MS]");
            System.exit(2);
        }
        CuratorFramework client = CuratorFrameworkFactory.newClient(
            connect, sessionMs, Math.min(sessionMs, 5000), new ExponentialBackoffRetry(100, 5));
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.LOST) {
                say("lost", "connection state LOST (session gone)");
            } else if (state == ConnectionState.SUSPENDED) {
                System.err.println("connection SUSPENDED");
            }
        });
        client.start();
        say("follower", "campaigning with Curator " + recipe + " on " + path);
        if (recipe.equals("latch")) {
            latch(client, path);
        } else {
            selector(client, path);
        }
        new CountDownLatch(1).await();
    }

    static void latch(CuratorFramework client, String path) throws Exception {
        LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                say("leader", "LeaderLatch isLeader");
            }

            @Override
            public void notLeader() {
                say("follower", "LeaderLatch notLeader");
            }
        });
        latch.start();
    }

    static void selector(CuratorFramework client, String path) {
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) throws Exception {
                say("leader", "LeaderSelector takeLeadership");
                try {
                    // Lead until interrupted (connection SUSPENDED/LOST cancels leadership).
                    new CountDownLatch(1).await();
                } finally {
                    say("follower", "LeaderSelector takeLeadership ended");
                }
            }
        });
        selector.setId(id);
        selector.autoRequeue();
        selector.start();
    }
}
