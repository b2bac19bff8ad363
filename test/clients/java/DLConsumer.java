import com.rabbitmq.client.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

/** Seed 003's DLConsumer.java made runnable, its snippet as printed between the markers (see Target.java). */
public class DLConsumer {
    public static void main(String[] argv) throws Exception {
        Channel channel = Target.interactive(argv).openChannel();
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
