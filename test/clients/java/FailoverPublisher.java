import com.rabbitmq.client.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

/**
 * Not from the guide: at-least-once publishing across a cluster with a client-side retry list.
 * Publishes COUNT messages with confirms, one at a time, through the first address that answers;
 * when the connection is lost it connects again down the list and republishes what was not
 * confirmed; then consumes the queue until every confirmed message is back. Prints `connected
 * host:port`, `confirmed i`, `lost reason`, `received i`, `done n duplicates d`.
 * Usage: java FailoverPublisher QUEUE COUNT URL [URL...] [--ca FILE]
 */
public class FailoverPublisher {
    private static final long DEADLINE = System.nanoTime() + 60_000_000_000L;

    public static void main(String[] argv) throws Exception {
        String queue = argv[0];
        int count = Integer.parseInt(argv[1]);
        Target target = Target.of(Arrays.copyOfRange(argv, 2, argv.length));
        ConnectionFactory factory = target.factory();
        // This program recovers by itself: it knows which publishes were confirmed.
        factory.setAutomaticRecoveryEnabled(false);
        Channel channel = null;
        int next = 0;
        while (next < count) {
            checkDeadline(next + " of " + count + " confirmed");
            try {
                if (channel == null) channel = session(factory, target.addresses(), queue);
                channel.basicPublish("", queue, true, MessageProperties.PERSISTENT_BASIC,
                    String.valueOf(next).getBytes(StandardCharsets.UTF_8));
                channel.waitForConfirmsOrDie(5_000);
                System.out.println("confirmed " + next);
                next++;
                Thread.sleep(50);
            } catch (Exception lost) {
                System.out.println("lost " + lost);
                channel = null;
                Thread.sleep(500);
            }
        }
        Set<Integer> seen = new HashSet<>();
        int duplicates = 0;
        while (seen.size() < count) {
            checkDeadline(seen.size() + " of " + count + " back");
            try {
                if (channel == null) channel = session(factory, target.addresses(), queue);
                GetResponse got = channel.basicGet(queue, false);
                if (got == null) {
                    Thread.sleep(100);
                    continue;
                }
                int number = Integer.parseInt(new String(got.getBody(), StandardCharsets.UTF_8));
                if (seen.add(number)) System.out.println("received " + number);
                else duplicates++;
                channel.basicAck(got.getEnvelope().getDeliveryTag(), false);
            } catch (Exception lost) {
                System.out.println("lost " + lost);
                channel = null;
                Thread.sleep(500);
            }
        }
        channel.getConnection().close();
        System.out.println("done " + seen.size() + " duplicates " + duplicates);
    }

    /** The first address of the list that answers, in order (logged), with a confirm channel. */
    private static Channel session(ConnectionFactory factory, Address[] addresses, String queue) throws Exception {
        Exception last = null;
        for (Address address : addresses) {
            try {
                Connection connection = factory.newConnection(new Address[] {address});
                System.out.println("connected " + address.getHost() + ":" + address.getPort());
                Channel channel = connection.createChannel();
                channel.confirmSelect();
                channel.queueDeclare(queue, true, false, false, null);
                return channel;
            } catch (Exception failed) {
                last = failed;
            }
        }
        throw last;
    }

    private static void checkDeadline(String progress) {
        if (System.nanoTime() > DEADLINE) throw new IllegalStateException("deadline passed with " + progress);
    }
}
