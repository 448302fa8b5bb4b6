//! Metrics: the instruments rein records and their cumulative aggregation.
//!
//! Temporality is **cumulative**: every export carries the totals since
//! telemetry started (one start time for all series). A failed export
//! loses nothing (the next one carries the same totals), and backends that
//! want rates compute them. Series that saw nothing new since the last
//! successful export are still sent, but an export is skipped when nothing
//! at all was recorded since the last one.

use std::collections::BTreeMap;

use crate::proto::KeyValue;
use crate::proto::metrics::{
    AggregationTemporality, Data, Histogram, HistogramDataPoint, Metric, NumberDataPoint,
    NumberValue, Sum,
};
use crate::semconv;

/// The instruments. Each has one name, unit and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Instrument {
    /// Tokens of a model call, by `gen_ai.token.type` (input/output).
    TokenUsage,
    /// Seconds of a model call (`chat`).
    OperationDuration,
    /// Seconds of a tool call.
    ToolDuration,
    /// Tool calls that failed or were refused.
    ToolErrors,
    /// US dollars of known cost, added when a top-level run stops.
    Cost,
}

/// The advisory bucket bounds of `gen_ai.client.token.usage`.
const TOKEN_BOUNDS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// The advisory bucket bounds of `gen_ai.client.operation.duration`
/// (seconds); tools share them, with a few longer ones for builds and tests.
const DURATION_BOUNDS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
const TOOL_BOUNDS: [f64; 17] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84,
    327.68, 655.36,
];

impl Instrument {
    fn name(self) -> &'static str {
        match self {
            Instrument::TokenUsage => semconv::METRIC_TOKEN_USAGE,
            Instrument::OperationDuration => semconv::METRIC_OPERATION_DURATION,
            Instrument::ToolDuration => semconv::METRIC_TOOL_DURATION,
            Instrument::ToolErrors => semconv::METRIC_TOOL_ERRORS,
            Instrument::Cost => semconv::METRIC_COST,
        }
    }

    fn description(self) -> &'static str {
        match self {
            Instrument::TokenUsage => "Number of input and output tokens used.",
            Instrument::OperationDuration => "GenAI operation duration.",
            Instrument::ToolDuration => "Duration of tool executions.",
            Instrument::ToolErrors => "Tool calls that failed or were refused.",
            Instrument::Cost => "Known cost of model calls, in US dollars.",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Instrument::TokenUsage => "{token}",
            Instrument::OperationDuration | Instrument::ToolDuration => "s",
            Instrument::ToolErrors => "{call}",
            Instrument::Cost => "USD",
        }
    }

    /// Bucket bounds for a histogram; `None` for a counter.
    fn bounds(self) -> Option<&'static [f64]> {
        match self {
            Instrument::TokenUsage => Some(&TOKEN_BOUNDS),
            Instrument::OperationDuration => Some(&DURATION_BOUNDS),
            Instrument::ToolDuration => Some(&TOOL_BOUNDS),
            Instrument::ToolErrors | Instrument::Cost => None,
        }
    }
}

/// One value recorded by an observer, queued for the exporter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measurement {
    pub instrument: Instrument,
    pub value: f64,
    /// Sorted by key, so equal sets make one series.
    pub attributes: Vec<(&'static str, String)>,
}

impl Measurement {
    pub fn new(
        instrument: Instrument,
        value: f64,
        mut attributes: Vec<(&'static str, String)>,
    ) -> Self {
        attributes.sort();
        Measurement {
            instrument,
            value,
            attributes,
        }
    }
}

/// The running totals of one series.
#[derive(Debug, Clone)]
enum Series {
    Sum(f64),
    Histogram {
        count: u64,
        sum: f64,
        min: f64,
        max: f64,
        buckets: Vec<u64>,
    },
}

type SeriesKey = (Instrument, Vec<(&'static str, String)>);

/// Cumulative totals of every series since `start`.
#[derive(Debug)]
pub(crate) struct Aggregator {
    start: u64,
    series: BTreeMap<SeriesKey, Series>,
    changed: bool,
}

impl Aggregator {
    pub fn new(start: u64) -> Self {
        Aggregator {
            start,
            series: BTreeMap::new(),
            changed: false,
        }
    }

    pub fn record(&mut self, m: Measurement) {
        // A NaN or infinite value would poison the series' sum forever.
        if !m.value.is_finite() {
            return;
        }
        self.changed = true;
        let series = self
            .series
            .entry((m.instrument, m.attributes))
            .or_insert_with(|| match m.instrument.bounds() {
                Some(bounds) => Series::Histogram {
                    count: 0,
                    sum: 0.0,
                    min: f64::INFINITY,
                    max: f64::NEG_INFINITY,
                    buckets: vec![0; bounds.len() + 1],
                },
                None => Series::Sum(0.0),
            });
        match series {
            Series::Sum(total) => *total += m.value,
            Series::Histogram {
                count,
                sum,
                min,
                max,
                buckets,
            } => {
                *count += 1;
                *sum += m.value;
                *min = min.min(m.value);
                *max = max.max(m.value);
                // Bucket i holds values in (bounds[i-1], bounds[i]].
                let bounds = m.instrument.bounds().unwrap_or(&[]);
                let index = bounds
                    .iter()
                    .position(|b| m.value <= *b)
                    .unwrap_or(bounds.len());
                if let Some(slot) = buckets.get_mut(index) {
                    *slot += 1;
                }
            }
        }
    }

    /// Whether something was recorded since the last `snapshot`.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// Send the totals again at the next export (the last one failed).
    pub fn mark_changed(&mut self) {
        self.changed = true;
    }

    /// Every series as OTLP metrics at `now`; clears `changed`.
    pub fn snapshot(&mut self, now: u64) -> Vec<Metric> {
        self.changed = false;
        let mut metrics: Vec<Metric> = Vec::new();
        for ((instrument, attrs), series) in &self.series {
            let attributes: Vec<KeyValue> = attrs
                .iter()
                .map(|(k, v)| KeyValue::string(k, v.as_str()))
                .collect();
            let metric = match metrics.iter_mut().find(|m| m.name == instrument.name()) {
                Some(m) => m,
                None => {
                    metrics.push(empty_metric(*instrument));
                    let last = metrics.len() - 1;
                    &mut metrics[last]
                }
            };
            match (&mut metric.data, series) {
                (Some(Data::Sum(sum)), Series::Sum(total)) => {
                    let value = if *instrument == Instrument::ToolErrors {
                        NumberValue::AsInt(*total as i64)
                    } else {
                        NumberValue::AsDouble(*total)
                    };
                    sum.data_points.push(NumberDataPoint {
                        attributes,
                        start_time_unix_nano: self.start,
                        time_unix_nano: now,
                        value: Some(value),
                        flags: 0,
                    });
                }
                (
                    Some(Data::Histogram(h)),
                    Series::Histogram {
                        count,
                        sum,
                        min,
                        max,
                        buckets,
                    },
                ) => h.data_points.push(HistogramDataPoint {
                    attributes,
                    start_time_unix_nano: self.start,
                    time_unix_nano: now,
                    count: *count,
                    sum: Some(*sum),
                    bucket_counts: buckets.clone(),
                    explicit_bounds: instrument.bounds().unwrap_or(&[]).to_vec(),
                    flags: 0,
                    min: Some(*min),
                    max: Some(*max),
                }),
                _ => {}
            }
        }
        metrics
    }
}

fn empty_metric(instrument: Instrument) -> Metric {
    let temporality = AggregationTemporality::Cumulative as i32;
    let data = match instrument.bounds() {
        Some(_) => Data::Histogram(Histogram {
            data_points: Vec::new(),
            aggregation_temporality: temporality,
        }),
        None => Data::Sum(Sum {
            data_points: Vec::new(),
            aggregation_temporality: temporality,
            is_monotonic: true,
        }),
    };
    Metric {
        name: instrument.name().to_string(),
        description: instrument.description().to_string(),
        unit: instrument.unit().to_string(),
        data: Some(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_count_values_in_upper_inclusive_buckets() {
        let mut agg = Aggregator::new(1);
        let attrs = || vec![(semconv::TOKEN_TYPE, "input".to_string())];
        for v in [1.0, 3.0, 4.0, 100.0] {
            agg.record(Measurement::new(Instrument::TokenUsage, v, attrs()));
        }
        agg.record(Measurement::new(Instrument::TokenUsage, f64::NAN, attrs()));
        let metrics = agg.snapshot(2);
        assert!(!agg.changed());
        let Some(Data::Histogram(h)) = &metrics[0].data else {
            panic!("{metrics:?}")
        };
        let p = &h.data_points[0];
        assert_eq!(p.count, 4);
        assert_eq!(p.sum, Some(108.0));
        assert_eq!(&p.bucket_counts[..5], &[1, 2, 0, 0, 1]);
        assert_eq!((p.min, p.max), (Some(1.0), Some(100.0)));
        assert_eq!(p.start_time_unix_nano, 1);
    }
}
