//! The OpenAPI document: it lists every route, and each route answers with
//! one of the statuses the document lists for it.

use serde_json::json;

use super::{Served, create, write_script};
use crate::cli::support::*;

#[test]
fn serve_openapi_lists_every_route_and_each_answers() {
    let env = Env::new();
    let script = write_script(&env);
    let s = Served::start(&env, &["--script", &script]);
    let (status, doc) = s.call("GET", "/openapi.json", None);
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let id = create(&s, json!({}));
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 9, "{:?}", paths.keys());
    for (path, ops) in paths {
        for method in ops
            .as_object()
            .unwrap()
            .keys()
            .filter(|m| *m != "parameters")
        {
            let concrete = path.replace("{id}", &id).replace("{call_id}", "c1");
            if concrete.ends_with("/events") || method == "delete" {
                continue; // a stream; a deletion (tested below)
            }
            let (status, body) = s.call(&method.to_uppercase(), &concrete, Some(json!({})));
            assert!(
                status != 404 || body["error"].as_str().unwrap_or("").contains("approval"),
                "{method} {path} is documented but not served: {status} {body}"
            );
            // The answer is one the document lists for this operation (so
            // never a 500, which none lists).
            let listed = &ops[method.as_str()]["responses"];
            assert!(
                listed.get(status.to_string()).is_some(),
                "{method} {path} answered {status}, not among {listed}: {body}"
            );
            assert!(status < 500, "{method} {path}: {status} {body}");
        }
        // A method the path does not take: 405, and `Allow` lists exactly
        // the documented ones.
        let concrete = path.replace("{id}", &id).replace("{call_id}", "c1");
        let auth = format!("Bearer {}", s.token);
        let (status, headers, _) = s.raw("PUT", &concrete, &[("Authorization", &auth)], None);
        assert_eq!(status, 405, "PUT {path}");
        let allow = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("allow"))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("PUT {path}: 405 without Allow: {headers:?}"));
        let mut said: Vec<String> = allow.split(',').map(|m| m.trim().to_string()).collect();
        let mut documented: Vec<String> = ops
            .as_object()
            .unwrap()
            .keys()
            .filter(|m| *m != "parameters")
            .map(|m| m.to_uppercase())
            .collect();
        said.sort();
        documented.sort();
        assert_eq!(said, documented, "Allow of {path}");
    }
    let (status, _) = s.call("DELETE", &format!("/sessions/{id}"), None);
    assert_eq!(status, 204);
    let (status, _) = s.call("GET", &format!("/sessions/{id}"), None);
    assert_eq!(status, 404);
}
