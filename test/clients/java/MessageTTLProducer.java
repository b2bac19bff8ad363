import com.rabbitmq.client.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

/** Seed 003's MessageTTLProducer.java made runnable, its snippet as printed between the markers (see Target.java). */
public class MessageTTLProducer {
    public static void main(String[] argv) throws Exception {
        Target target = Target.interactive(argv);
        ConnectionFactory factory = target.factory();
        Address[] addresses = target.addresses();
        Connection connection = null;
        // ---- seed 003, MessageTTLProducer.java: from here, as printed ----
        try {
            connection = factory.newConnection(addresses);
            Channel channel = connection.createChannel();

            // 声明死信交换机
            channel.exchangeDeclare("msg.ttl.dl.exchange.test", BuiltinExchangeType.TOPIC);
            Map<String, Object> params = new HashMap<>();
            params.put("x-dead-letter-exchange", "msg.ttl.dl.exchange.test");
            params.put("x-dead-letter-routing-key", "msg.ttl.dl.routing.key");
            // 在 5 s 内没有被消费的消息会被 "丢弃"，如果有死信队列，那么会被路由到死信队列
            params.put("x-message-ttl", 5000);
            // 声明死信队列
            channel.queueDeclare("msg.ttl.dl.queue.test", false, false, false, null);
            // 死信队列绑定到死信交换机
            channel.queueBind("msg.ttl.dl.queue.test", "msg.ttl.dl.exchange.test", "#.msg.ttl.dl.routing.key");

            // 声明普通队列，并绑定死信交换机
            channel.queueDeclare("msg.ttl.queue.test", false, false, false, params);
            // 将普通队列绑定到普通交换机
            channel.exchangeDeclare("msg.ttl.exchange.test", BuiltinExchangeType.TOPIC);
            channel.queueBind("msg.ttl.queue.test", "msg.ttl.exchange.test", "#.msg.ttl.routing.key");

            Scanner scanner = new Scanner(System.in);

            String message;
            System.out.print("> ");
            while (!(message = scanner.nextLine()).equalsIgnoreCase("q")) {
                channel.basicPublish("msg.ttl.exchange.test", "msg.ttl.routing.key", null, message.getBytes(StandardCharsets.UTF_8));
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
        // ---- seed 003, MessageTTLProducer.java: to here ----

    }
}
