import com.rabbitmq.client.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

/** Seed 003's QueueLengthLimitProducer.java made runnable, its snippet as printed between the markers (see Target.java). */
public class QueueLengthLimitProducer {
    public static void main(String[] argv) throws Exception {
        Target target = Target.interactive(argv);
        ConnectionFactory factory = target.factory();
        Address[] addresses = target.addresses();
        Connection connection = null;
        // ---- seed 003, QueueLengthLimitProducer.java: from here, as printed ----
        try {
            connection = factory.newConnection(addresses);
            Channel channel = connection.createChannel();

            // 声明死信交换机
            channel.exchangeDeclare("length.limit.dl.exchange.test", BuiltinExchangeType.TOPIC);
            Map<String, Object> params = new HashMap<>();
            params.put("x-dead-letter-exchange", "length.limit.dl.exchange.test");
            params.put("x-dead-letter-routing-key", "length.limit.dl.routing.key");
            // 队列最大长度为 5，队列存储的消息超过 5 个消息后，新的消息会被 "丢弃"，如果有死信队列，那么会被路由到死信队列
            // 默认丢弃最早的消息，可以通过设置 x-overflow 参数为 drop-head 或 reject-publish 来改变这种行为
            params.put("x-max-length", 5);
            // 声明死信队列
            channel.queueDeclare("length.limit.dl.queue.test", false, false, false, null);
            // 死信队列绑定到死信交换机
            channel.queueBind("length.limit.dl.queue.test", "length.limit.dl.exchange.test", "#.length.limit.dl.routing.key");

            // 声明普通队列，并绑定死信交换机
            channel.queueDeclare("length.limit.queue.test", false, false, false, params);
            // 将普通队列绑定到普通交换机
            channel.exchangeDeclare("length.limit.exchange.test", BuiltinExchangeType.TOPIC);
            channel.queueBind("length.limit.queue.test", "length.limit.exchange.test", "#.length.limit.routing.key");

            Scanner scanner = new Scanner(System.in);

            String message;
            System.out.print("> ");
            while (!(message = scanner.nextLine()).equalsIgnoreCase("q")) {
                channel.basicPublish("length.limit.exchange.test", "length.limit.routing.key", null, message.getBytes(StandardCharsets.UTF_8));
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
        // ---- seed 003, QueueLengthLimitProducer.java: to here ----

    }
}
