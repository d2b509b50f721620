import org.apache.kafka.common.protocol.ApiKeys;

/**
 * Prints, for every API the Kafka client jar on the classpath can send to a
 * broker (ApiKeys.clientApis()), "id name oldest latest": latest is the
 * newest stable version the client would pick when a broker advertises it.
 * e2e/kafka_tools_test.go compares that with what lakegw advertises.
 */
public class ClientApiVersions {
    public static void main(String[] args) {
        for (ApiKeys key : ApiKeys.clientApis()) {
            System.out.println(key.id + " " + key.name + " " + key.oldestVersion() + " " + key.latestVersion());
        }
    }
}
