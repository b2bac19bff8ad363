import com.rabbitmq.client.Address;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The broker these programs talk to, from the command line: one or more AMQP URLs (amqp:// or
 * amqps://; several make a retry list) and, for amqps, `--ca FILE`, the PEM CA certificate to
 * verify the broker with. This is the part of each program a reader would write differently for
 * their own deployment; the scenarios themselves do not know which broker they talk to.
 *
 * Seed 003's programs (DLProducer … QueueLengthLimitConsumer) are the dead-lettering guide's Java
 * snippets, as printed (calls and comments unchanged) between two marker comments; the wrapper
 * around each supplies only what the snippet takes from its surroundings: `factory` and `addresses`
 * from here, and for the consumers whose snippet does not open its own, `channel` (openChannel).
 * Usage: java PROGRAM URL [URL...] [--ca FILE]
 */
final class Target {
    final List<String> urls = new ArrayList<>();
    String ca;

    /**
     * For a program typed at: stdout unbuffered as on a terminal, so a prompt without a newline
     * (the seed producers' "> ") shows before the program reads its input.
     */
    static Target interactive(String[] argv) {
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8));
        return of(argv);
    }

    static Target of(String[] argv) {
        Target target = new Target();
        for (int i = 0; i < argv.length; i++) {
            if (argv[i].equals("--ca")) target.ca = argv[++i];
            else target.urls.add(argv[i]);
        }
        if (target.urls.isEmpty()) throw new IllegalArgumentException("usage: URL [URL...] [--ca FILE]");
        return target;
    }

    /** A factory set from the first URL (credentials, vhost, TLS), as an application would build it. */
    ConnectionFactory factory() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(urls.get(0));
        if (urls.get(0).startsWith("amqps://")) factory.useSslProtocol(sslContext());
        return factory;
    }

    /** Every URL's host and port, in order: the `addresses` of seed 003's `factory.newConnection(addresses)`. */
    Address[] addresses() {
        Address[] addresses = new Address[urls.size()];
        for (int i = 0; i < urls.size(); i++) {
            URI uri = URI.create(urls.get(i));
            addresses[i] = new Address(uri.getHost(), uri.getPort());
        }
        return addresses;
    }

    /** A channel on a new connection to the first address that answers (the seed's `channel`). */
    Channel openChannel() throws Exception {
        return factory().newConnection(addresses()).createChannel();
    }

    /** TLS that trusts exactly the given CA (never "trust everything"). */
    private SSLContext sslContext() throws Exception {
        if (ca == null) throw new IllegalArgumentException("an amqps:// URL needs --ca FILE");
        KeyStore trusted = KeyStore.getInstance(KeyStore.getDefaultType());
        trusted.load(null, null);
        try (FileInputStream in = new FileInputStream(ca)) {
            trusted.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        SSLContext context = SSLContext.getInstance("TLSv1.2");
        context.init(null, trust.getTrustManagers(), null);
        return context;
    }
}
