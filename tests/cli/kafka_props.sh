#!/bin/sh
# kafka_props.sh - `tidemark validate` and `tidemark run` check the
# kafka.* properties of Kafka sources and sinks against librdkafka before
# anything connects (docs/kafka.md, "Operations guards"): an unknown name
# or a bad value, transactional.id, a property tidemark sets itself, a
# consumer property on a sink and a producer property on a source
# without repartition are refused (exit 3) with the node, the key and
# librdkafka's own words; the rest are accepted.  No broker is needed:
# nothing here connects (the brokers are a closed port).
# Usage: kafka_props.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

# job NAME SOURCE_PROPS SINK_PROPS [SOURCE_LINE]: a Kafka-to-Kafka job
# with the given kafka: maps.
job() {
    cat >"$T/$1.yaml" <<YAML
name: t
sources:
  clicks:
    type: kafka
    brokers: "127.0.0.1:1"
    topics: clicks
    schema: {k: string, v: int64, ts: int64}
    timestamp: {field: ts}
    kafka: $2
    ${4:-stop: end}
windows:
  w:
    from: clicks
    key_by: k
    window: {type: tumbling, size: 10s}
    sink: out
sinks:
  out:
    type: kafka
    brokers: "127.0.0.1:1"
    topic: results
    kafka: $3
YAML
}

# bad NAME TEXT...: validate and run both exit 3 naming every TEXT.
bad() {
    name=$1
    shift
    for cmd in validate run; do
        expect_exit "$name ($cmd)" 3 "$TM" $cmd "$T/$name.yaml"
        for text in "$@"; do
            expect_in "$name ($cmd)" "$T/err" "$text"
        done
    done
}

job good '{session.timeout.ms: 45000, isolation.level: read_committed}' \
    '{acks: 1, linger.ms: 20, enable.idempotence: false}'
expect_exit "accepted properties" 0 "$TM" validate "$T/good.yaml"

job unknown_src '{no.such.thing: 1}' '{}'
bad unknown_src 'sources.clicks.kafka.no.such.thing:' \
    'No such configuration property'
job unknown_sink '{}' '{lingerr.ms: 5}'
bad unknown_sink 'sinks.out.kafka.lingerr.ms:' \
    'No such configuration property'

job bad_value_src '{session.timeout.ms: soon}' '{}'
bad bad_value_src 'sources.clicks.kafka.session.timeout.ms:' \
    'Invalid value for configuration property'
job bad_value_sink '{}' '{acks: many}'
bad bad_value_sink 'sinks.out.kafka.acks:' 'Invalid value'

job txid_sink '{}' '{transactional.id: mine}'
bad txid_sink 'sinks.out.kafka.transactional.id: not allowed' \
    'tidemark sets the transactional id itself'
job txid_src '{transactional.id: mine}' '{}'
bad txid_src 'sources.clicks.kafka.transactional.id: not allowed'

job autocommit '{enable.auto.commit: true}' '{}'
bad autocommit 'sources.clicks.kafka.enable.auto.commit: not allowed' \
    'tidemark commits offsets itself'
job groupid '{group.id: other}' '{}'
bad groupid 'sources.clicks.kafka.group.id: not allowed' 'key group'
job reset '{auto.offset.reset: latest}' '{}'
bad reset 'kafka.auto.offset.reset: not allowed' 'key start'

job consumer_on_sink '{}' '{session.timeout.ms: 45000}'
bad consumer_on_sink 'sinks.out.kafka.session.timeout.ms: a consumer property'
job producer_on_source '{linger.ms: 20}' '{}'
bad producer_on_source \
    'sources.clicks.kafka.linger.ms: a producer property'
# With repartition the source also produces: producer properties are its.
job producer_repartition '{linger.ms: 20}' '{}' 'repartition: always'
expect_exit "producer property with repartition" 0 "$TM" validate \
    "$T/producer_repartition.yaml"

echo "kafka_props: OK"
