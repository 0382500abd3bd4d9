package loadtest.target;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

@SpringBootApplication
@ConfigurationPropertiesScan
public class LoadtestTargetApplication {

    public static void main(String[] args) {
        SpringApplication.run(LoadtestTargetApplication.class, args);
    }
}
