use super::*;

#[test]
fn what_the_client_offers_decides_what_goes_through_it() {
    let none = Through::offered(&ClientCapabilities::default());
    assert_eq!(none, Through::default());
    let caps: ClientCapabilities = serde_json::from_value(serde_json::json!({
        "fs": {"readTextFile": true, "writeTextFile": false}, "terminal": true
    }))
    .unwrap();
    assert_eq!(
        Through::offered(&caps),
        Through {
            read: true,
            write: false
        }
    );
}
