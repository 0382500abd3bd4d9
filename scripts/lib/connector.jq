# The connector settings a Spring Boot application reports in
# /actuator/configprops (its "server" properties), compared with the ones
# the cell set. Input: the endpoint's JSON; $expected: {"server.tomcat.x": n}
# (durations in ms). Output: {checked, reason, mismatches: [{property, cell,
# effective}]}.

# A duration as Spring reports it ("PT20S", "PT1M", "PT0.5S") or a number, in ms.
def millis:
  if type == "number" then .
  elif type == "string" and test("^PT") then
    capture("^PT((?<h>[0-9.]+)H)?((?<m>[0-9.]+)M)?((?<s>[0-9.]+)S)?$")
    | ((.h // "0" | tonumber) * 3600000 + (.m // "0" | tonumber) * 60000 + (.s // "0" | tonumber) * 1000)
  else . end;
# server.tomcat.max-connections -> ["tomcat", "maxConnections"] (under "server").
def path_of: split(".")[1:] | map(gsub("-(?<c>[a-z])"; .c | ascii_upcase));

[.. | objects | select(.prefix? == "server" and (.properties | type == "object")) | .properties] as $found
| if ($found | length) == 0 then
    {checked: false, reason: "/actuator/configprops shows no server properties (set management.endpoint.configprops.show-values=always)", mismatches: []}
  else
    $found[0] as $props
    | {checked: true, reason: null,
       mismatches: [$expected | to_entries[]
         | (.key | path_of) as $path
         | ($props | getpath($path) | millis) as $effective
         | select($effective != .value)
         | {property: .key, cell: .value, effective: $effective}]}
  end
