import com.rabbitmq.client.*;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.*;

/**
 * Seed 003's DLProducer.java (the dead-lettering guide's Java scenario) made runnable: the lines between
 * the two markers are the guide's snippet as printed, calls and comments unchanged. The wrapper only
 * supplies what the snippet takes from its surroundings: `factory` and `addresses` from the command
 * line (Target.java: broker URLs, optional --ca for amqps).
 * Usage: java DLProducer URL [URL...] [--ca FILE]
 */
public class DLProducer {
    public static void main(String[] argv) throws Exception {
        // Unbuffered stdout, as on a terminal: the snippet's "> " prompt shows before its input is read.
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8));
        Target target = Target.of(argv);
        ConnectionFactory factory = target.factory();
        Address[] addresses = target.addresses();
        Connection connection = null;
        // ---- seed 003, DLProducer.java: from here, as printed ----
        try {
            connection = factory.newConnection(addresses);
            Channel channel = connection.createChannel();

            channel.exchangeDeclare("normal.exchange.test", BuiltinExchangeType.TOPIC);

            Scanner scanner = new Scanner(System.in);

            String message;
            System.out.print("> ");
            while (!(message = scanner.nextLine()).equalsIgnoreCase("q")) {
                channel.basicPublish("normal.exchange.test", "prefix.normal.routing.key", null, message.getBytes(StandardCharsets.UTF_8));
                System.out.print("> ");
            }

            channel.close();
        } catch (Exception e) {
            e.printStackTrace();
        } finally {
            if (connection != null) {
                connection.close();
            }
        }
        // ---- seed 003, DLProducer.java: to here ----

    }
}
