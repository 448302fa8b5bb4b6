//! The OTLP wire messages rein sends, declared by hand with prost's derive.
//!
//! Only the messages and fields rein writes (and a test receiver reads) are
//! here; field numbers and types are those of opentelemetry-proto
//! (`opentelemetry/proto/{common,resource,trace,metrics,collector}/…`), so
//! any OTLP receiver decodes them. Fields rein never sets (string-table
//! indexes, entity refs, links, exemplars) are left out: protobuf readers
//! skip what is absent.

pub mod metrics;
pub mod trace;

/// A value of an attribute (`common.v1.AnyValue`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    #[prost(oneof = "Value", tags = "1, 2, 3, 4, 5")]
    pub value: Option<Value>,
}

/// The kinds of value rein writes (`AnyValue.value`).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    #[prost(string, tag = "1")]
    StringValue(String),
    #[prost(bool, tag = "2")]
    BoolValue(bool),
    #[prost(int64, tag = "3")]
    IntValue(i64),
    #[prost(double, tag = "4")]
    DoubleValue(f64),
    #[prost(message, tag = "5")]
    ArrayValue(ArrayValue),
}

/// A list of values (`common.v1.ArrayValue`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ArrayValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

/// One attribute (`common.v1.KeyValue`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

impl KeyValue {
    fn of(key: &str, value: Value) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Some(AnyValue { value: Some(value) }),
        }
    }

    pub fn string(key: &str, value: impl Into<String>) -> KeyValue {
        KeyValue::of(key, Value::StringValue(value.into()))
    }

    /// An integer attribute; counts above `i64::MAX` are capped there.
    pub fn int(key: &str, value: u64) -> KeyValue {
        KeyValue::of(
            key,
            Value::IntValue(i64::try_from(value).unwrap_or(i64::MAX)),
        )
    }

    pub fn bool(key: &str, value: bool) -> KeyValue {
        KeyValue::of(key, Value::BoolValue(value))
    }

    pub fn double(key: &str, value: f64) -> KeyValue {
        KeyValue::of(key, Value::DoubleValue(value))
    }

    pub fn strings(key: &str, values: impl IntoIterator<Item = String>) -> KeyValue {
        let values = values
            .into_iter()
            .map(|s| AnyValue {
                value: Some(Value::StringValue(s)),
            })
            .collect();
        KeyValue::of(key, Value::ArrayValue(ArrayValue { values }))
    }

    /// The value as text when it is a string (for readers and tests).
    pub fn as_str(&self) -> Option<&str> {
        match self.value.as_ref()?.value.as_ref()? {
            Value::StringValue(s) => Some(s),
            _ => None,
        }
    }

    /// The value when it is an integer.
    pub fn as_int(&self) -> Option<i64> {
        match self.value.as_ref()?.value.as_ref()? {
            Value::IntValue(i) => Some(*i),
            _ => None,
        }
    }
}

/// What produced the telemetry (`resource.v1.Resource`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "2")]
    pub dropped_attributes_count: u32,
}

/// The library that recorded it (`common.v1.InstrumentationScope`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "4")]
    pub dropped_attributes_count: u32,
}

/// The attribute called `key` in `attributes`, if any.
pub fn find<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a KeyValue> {
    attributes.iter().find(|kv| kv.key == key)
}
