import com.rabbitmq.client.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

/** Seed 003's QueueLengthLimitConsumer.java made runnable, its snippet as printed between the markers (see Target.java). */
public class QueueLengthLimitConsumer {
    public static void main(String[] argv) throws Exception {
        Target target = Target.interactive(argv);
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
