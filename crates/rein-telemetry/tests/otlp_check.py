"""Decode what rein exported with the OpenTelemetry project's own Python
classes (opentelemetry-proto) and check the GenAI names against the
published semantic conventions (opentelemetry-semantic-conventions).

Usage: otlp_check.py DIR. DIR holds traces-*.bin and metrics-*.bin, the
request bodies rein sent. Prints one JSON object on stdout:
  spans: [{name, trace_id, span_id, parent_span_id, kind, status, attributes}]
  metrics: [{name, kind, points}]
  unknown_fields: where a message had fields its schema does not declare
  not_in_semconv: gen_ai.* attribute and metric names the conventions lack
Exits 2 when a body does not parse at all.
"""

import json
import os
import sys

from google.protobuf import unknown_fields
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics


def constants(module, prefix):
    """The string constants of a semconv module that start with prefix."""
    return {v for k, v in vars(module).items()
            if k.isupper() and isinstance(v, str) and v.startswith(prefix)}


GENAI_ATTRIBUTES = constants(gen_ai_attributes, "gen_ai.")
GENAI_METRICS = constants(gen_ai_metrics, "gen_ai.")


def unknown(message, path, found):
    """Record every message (recursively) carrying undeclared fields."""
    if len(unknown_fields.UnknownFieldSet(message)):
        found.append(path or message.DESCRIPTOR.full_name)
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.is_repeated:
            if field.message_type.GetOptions().map_entry:
                continue
            for i, item in enumerate(value):
                unknown(item, f"{path}.{field.name}[{i}]", found)
        else:
            unknown(value, f"{path}.{field.name}", found)


def plain(any_value):
    """An AnyValue as a JSON value (arrays as lists)."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [plain(v) for v in any_value.array_value.values]
    if kind is None:
        return None
    return {"string_value": lambda v: v, "bool_value": lambda v: v,
            "int_value": lambda v: v, "double_value": lambda v: v}[kind](
        getattr(any_value, kind))


def attributes(kvs, names):
    out = {}
    for kv in kvs:
        names.add(kv.key)
        out[kv.key] = plain(kv.value)
    return out


def main(folder):
    out = {"spans": [], "metrics": [], "unknown_fields": [], "not_in_semconv": []}
    names = set()
    metric_names = set()
    for file in sorted(os.listdir(folder)):
        data = open(os.path.join(folder, file), "rb").read()
        if file.startswith("traces-"):
            request = trace_service_pb2.ExportTraceServiceRequest()
        elif file.startswith("metrics-"):
            request = metrics_service_pb2.ExportMetricsServiceRequest()
        else:
            continue
        try:
            request.ParseFromString(data)
        except Exception as e:  # the decoder's own words
            print(f"{file}: does not parse: {e}", file=sys.stderr)
            return 2
        unknown(request, file, out["unknown_fields"])
        if file.startswith("traces-"):
            for rs in request.resource_spans:
                attributes(rs.resource.attributes, set())
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out["spans"].append({
                            "name": s.name,
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(),
                            "kind": s.kind,
                            "status": s.status.code,
                            "attributes": attributes(s.attributes, names),
                        })
        else:
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        points = getattr(m, kind).data_points
                        for p in points:
                            attributes(p.attributes, names)
                        metric_names.add(m.name)
                        out["metrics"].append(
                            {"name": m.name, "kind": kind, "points": len(points)})
    out["not_in_semconv"] = sorted(
        [n for n in names if n.startswith("gen_ai.") and n not in GENAI_ATTRIBUTES]
        + [n for n in metric_names if n.startswith("gen_ai.") and n not in GENAI_METRICS])
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
