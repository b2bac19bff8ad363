import com.rabbitmq.client.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

/** Seed 003's NormalConsumer.java made runnable, its snippet as printed between the markers (see Target.java). */
public class NormalConsumer {
    public static void main(String[] argv) throws Exception {
        Channel channel = Target.interactive(argv).openChannel();
        // ---- seed 003, NormalConsumer.java: from here, as printed ----
        try {
            // 声明死信交换机
            channel.exchangeDeclare("dl.exchange.test", BuiltinExchangeType.TOPIC);
            Map<String, Object> params = new HashMap<>();
            params.put("x-dead-letter-exchange", "dl.exchange.test");
            params.put("x-dead-letter-routing-key", "dl.routing.key");
            // 声明死信队列
            channel.queueDeclare("dl.queue.test", false, false, false, null);
            // 将死信队列绑定到死信交换机
            channel.queueBind("dl.queue.test", "dl.exchange.test", "#.dl.routing.key");

            // 声明普通队列，并绑定死信交换机
            channel.queueDeclare("normal.queue.test", false, false, false, params);
            // 将普通队列绑定到普通交换机
            channel.queueBind("normal.queue.test", "normal.exchange.test", "*.normal.routing.key");

            boolean autoAck = false;
            channel.basicConsume("normal.queue.test", autoAck, (consumerTag, delivery) -> {
                String message = new String(delivery.getBody());
                System.out.println(" [x] channel reject '" + message + "'");
                // 触发死信
                channel.basicReject(delivery.getEnvelope().getDeliveryTag(), false);
            }, consumerTag -> {
                System.out.println("channel cancel, consumerTag: " + consumerTag);
            });

        } finally {
            //channel1.close();
            //connection.close();
        }
        // ---- seed 003, NormalConsumer.java: to here ----
        // The wrapper's own line: the snippet has set its consumer up (a test waits for this).
        System.out.println("[wrapper] consuming");
    }
}
