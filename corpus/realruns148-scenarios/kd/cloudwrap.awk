# wrap each line in a cloud-logging-like JSON object (severity + message)
{
  line = $0
  gsub(/\\/, "\\\\", line); gsub(/"/, "\\\"", line); gsub(/\t/, "\\t", line)
  sev = "INFO"
  if (line ~ /(Traceback|Error|ERROR|error:|FAILED|exitcode)/) sev = "ERROR"
  else if (line ~ /(^W[0-9]|WARNING|Warning)/) sev = "WARNING"
  printf "{\"severity\":\"%s\",\"timestamp\":\"%s\",\"labels\":{\"job\":\"kd-train\",\"node\":\"%s\"},\"message\":\"%s\"}\n", sev, strftime("%Y-%m-%dT%H:%M:%S.000Z", systime(), 1), node, line
  fflush()
}
