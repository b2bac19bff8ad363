import com.rabbitmq.client.*;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.*;

/**
 * Seed 003's DLConsumer.java (the dead-lettering guide's Java scenario) made runnable: the lines between
 * the two markers are the guide's snippet as printed, calls and comments unchanged. The wrapper only
 * supplies what the snippet takes from its surroundings: `factory` and `addresses` from the command
 * line (Target.java: broker URLs, optional --ca for amqps), and `connection` / `channel`.
 * Usage: java DLConsumer URL [URL...] [--ca FILE]
 */
public class DLConsumer {
    public static void main(String[] argv) throws Exception {
        // Unbuffered stdout, as on a terminal: the snippet's "> " prompt shows before its input is read.
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8));
        Target target = Target.of(argv);
        ConnectionFactory factory = target.factory();
        Address[] addresses = target.addresses();
        Connection connection = factory.newConnection(addresses);
        Channel channel = connection.createChannel();
        // ---- seed 003, DLConsumer.java: from here, as printed ----
        try {
            channel.basicConsume("dl.queue.test", true, (consumerTag, delivery) -> {
                String message = new String(delivery.getBody());
                System.out.println(" [x] channel Received DL message '" + message + "'");
            }, consumerTag -> {
                System.out.println("channel cancel, consumerTag: " + consumerTag);
            });

        } finally {
            //channel1.close();
            //connection.close();
        }
        // ---- seed 003, DLConsumer.java: to here ----
        // The wrapper's own line: the snippet has set its consumer up (a test waits for this).
        System.out.println("[wrapper] consuming");
    }
}
