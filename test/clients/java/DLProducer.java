import com.rabbitmq.client.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

/** Seed 003's DLProducer.java made runnable, its snippet as printed between the markers (see Target.java). */
public class DLProducer {
    public static void main(String[] argv) throws Exception {
        Target target = Target.interactive(argv);
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
