import com.rabbitmq.client.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

/**
 * Not from the guide: a message published with confirms, rejected by its consumer into a
 * dead-letter exchange, and read back from the dead-letter queue with its x-death header printed
 * field by field, as `key=value` lines. Run over amqps:// (with --ca) it is the TLS check too.
 * Usage: java DeadLetterHeaders PREFIX URL [URL...] [--ca FILE]
 */
public class DeadLetterHeaders {
    public static void main(String[] argv) throws Exception {
        String prefix = argv[0];
        Target target = Target.of(Arrays.copyOfRange(argv, 1, argv.length));
        String work = prefix + ".work", dlx = prefix + ".dlx", orders = prefix + ".orders", dead = prefix + ".dead";
        try (Connection connection = target.factory().newConnection(target.addresses())) {
            Channel channel = connection.createChannel();
            channel.confirmSelect();
            channel.exchangeDeclare(work, BuiltinExchangeType.TOPIC, true);
            channel.exchangeDeclare(dlx, BuiltinExchangeType.TOPIC, true);
            channel.queueDeclare(dead, true, false, false, null);
            channel.queueBind(dead, dlx, "#");
            Map<String, Object> args = new HashMap<>();
            args.put("x-dead-letter-exchange", dlx);
            channel.queueDeclare(orders, true, false, false, args);
            channel.queueBind(orders, work, "order.*");
            channel.basicPublish(work, "order.created", MessageProperties.PERSISTENT_BASIC,
                "reject me".getBytes(StandardCharsets.UTF_8));
            channel.waitForConfirmsOrDie(10_000);
            System.out.println("confirmed");
            GetResponse got = channel.basicGet(orders, false);
            if (got == null) throw new IllegalStateException(orders + " was empty after a confirmed publish");
            channel.basicReject(got.getEnvelope().getDeliveryTag(), false);
            GetResponse deadLetter = null;
            for (int tries = 0; deadLetter == null && tries < 100; tries++) {
                deadLetter = channel.basicGet(dead, true);
                if (deadLetter == null) Thread.sleep(100);
            }
            if (deadLetter == null) throw new IllegalStateException("no dead letter in " + dead + " within 10 s");
            System.out.println("body=" + new String(deadLetter.getBody(), StandardCharsets.UTF_8));
            System.out.println("exchange=" + deadLetter.getEnvelope().getExchange());
            System.out.println("routing-key=" + deadLetter.getEnvelope().getRoutingKey());
            Map<String, Object> headers = deadLetter.getProps().getHeaders();
            for (String name : new String[] {"x-first-death-reason", "x-first-death-queue", "x-first-death-exchange"})
                System.out.println(name + "=" + headers.get(name));
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> deaths = (List<Map<String, Object>>) headers.get("x-death");
            System.out.println("x-death.size=" + deaths.size());
            for (Map.Entry<String, Object> field : new TreeMap<>(deaths.get(0)).entrySet()) {
                Object value = field.getValue();
                String type = value == null ? "null" : value.getClass().getSimpleName();
                System.out.println("x-death[0]." + field.getKey() + "=" + value + " (" + type + ")");
            }
        }
    }
}
