import com.rabbitmq.client.*;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.*;

/**
 * Seed 003's QueueLengthLimitConsumer.java (the dead-lettering guide's Java scenario) made runnable: the lines between
 * the two markers are the guide's snippet as printed, calls and comments unchanged. The wrapper only
 * supplies what the snippet takes from its surroundings: `factory` and `addresses` from the command
 * line (Target.java: broker URLs, optional --ca for amqps).
 * Usage: java QueueLengthLimitConsumer URL [URL...] [--ca FILE]
 */
public class QueueLengthLimitConsumer {
    public static void main(String[] argv) throws Exception {
        // Unbuffered stdout, as on a terminal: the snippet's "> " prompt shows before its input is read.
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8));
        Target target = Target.of(argv);
        ConnectionFactory factory = target.factory();
        Address[] addresses = target.addresses();
        // ---- seed 003, QueueLengthLimitConsumer.java: from here, as printed ----
        Connection connection = factory.newConnection();
        Channel channel = connection.createChannel();
        Channel dlChannel = connection.createChannel();

        try {
            // boolean autoAck = false;
            // channel.basicConsume("length.limit.queue.test", autoAck, (consumerTag, delivery) -> {
            //   String message = new String(delivery.getBody());
            //   System.out.println(" [x] channel reject '" + message + "'");
            // }, consumerTag -> {
            //   System.out.println("channel cancel, consumerTag: " + consumerTag);
            // });

            dlChannel.basicConsume("length.limit.dl.queue.test", true, (consumerTag, delivery) -> {
                String message = new String(delivery.getBody());
                System.out.println(" [x] dlChannel Received '" + message + "'");
            }, consumerTag -> {
                System.out.println("channel cancel, consumerTag: " + consumerTag);
            });

        } finally {
            //channel1.close();
            //connection.close();
        }
        // ---- seed 003, QueueLengthLimitConsumer.java: to here ----
        // The wrapper's own line: the snippet has set its consumer up (a test waits for this).
        System.out.println("[wrapper] consuming");
    }
}
