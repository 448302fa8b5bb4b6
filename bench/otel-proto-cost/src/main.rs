//! Uses one message so the crate is really built.
fn main() {
    let request = opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest::default();
    println!("{}", prost::Message::encoded_len(&request));
}
