# The connector settings a Spring Boot application reports in
# /actuator/configprops, compared with the ones the cell set. Each property is
# read from the bean whose prefix is the longest one it starts with: Spring
# Boot 2.7 and 3.x keep Tomcat's under "server" (ServerProperties.Tomcat),
# Spring Boot 4 in a bean of its own, "server.tomcat" (TomcatServerProperties
# of spring-boot-tomcat). Input: the endpoint's JSON; $expected:
# {"server.tomcat.x": n} (durations in ms); $threads, when given: the thread
# pool's mismatches (target_check_threads), added to the connector's; $source,
# when given: where the settings were read. Output: {checked, reason,
# mismatches: [{property, cell, effective}], source}.

# A duration as Spring reports it ("PT20S", "PT1M", "PT0.5S") or a number, in ms.
def millis:
  if type == "number" then .
  elif type == "string" and test("^PT") then
    capture("^PT((?<h>[0-9.]+)H)?((?<m>[0-9.]+)M)?((?<s>[0-9.]+)S)?$")
    | ((.h // "0" | tonumber) * 3600000 + (.m // "0" | tonumber) * 60000 + (.s // "0" | tonumber) * 1000)
  else . end;
# ["threads", "max-spare"] -> ["threads", "maxSpare"]: the bean's JSON names.
def camel: map(gsub("-(?<c>[a-z])"; .c | ascii_upcase));
# PROPERTY's path inside the bean of the longest prefix it starts with; null
# when no bean's prefix is one of its own.
def locate($beans; $property):
  ($property | split(".")) as $words
  | [$beans[] | (.prefix | split(".")) as $p
      | select($p == $words[0:($p | length)])
      | {size: ($p | length), properties, path: ($words[($p | length):] | camel)}]
  | max_by(.size) // null;

[.. | objects | select((.prefix? | type) == "string" and (.properties | type == "object"))
   | select(.prefix == "server" or (.prefix | startswith("server.")))] as $beans
| if ($beans | length) == 0 then
    {checked: false, reason: "/actuator/configprops shows no server properties (set management.endpoint.configprops.show-values=always)", mismatches: []}
  else
    [$expected | to_entries[]
       | locate($beans; .key) as $at
       | (if $at == null then null else ($at.properties | getpath($at.path)) end | millis) as $effective
       | select($effective != .value)
       | {property: .key, cell: .value, effective: $effective}] as $mismatches
    # Values Spring Boot masks ("******") are not known, not different.
    | if any($mismatches[]; .effective == "******") then
        {checked: false, reason: "/actuator/configprops masks its values (management.endpoint.configprops.show-values)", mismatches: []}
      else {checked: true, reason: null, mismatches: $mismatches} end
  end
| .mismatches += ($ARGS.named.threads // [])
| if $ARGS.named.source then .source = $ARGS.named.source else . end
