//! Images in the user's message: stored with it, sent to a model that
//! takes them, counted at their estimate; a model that does not take
//! them refuses the run before any call.

use rein_core::*;

use super::support::*;

fn png() -> Image {
    Image {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    }
}

fn with_image(prompt: &str) -> RunRequest {
    RunRequest {
        images: vec![png()],
        ..RunRequest::new(prompt)
    }
}

#[tokio::test]
async fn images_in_the_prompt_reach_the_model_and_are_stored_with_the_message() {
    let mut scripted = Scripted::build(vec![Ok(text("a red square"))]);
    scripted.images = true;
    let h = harness(std::sync::Arc::new(scripted), |b| b);
    let (outcome, _) = h.run(with_image("what is this?")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    let sent = &h.provider.requests()[0].messages[0];
    assert_eq!(
        sent,
        &Message::user_with_images("what is this?", vec![png()])
    );
    let stored = h.stored(&outcome).await;
    assert_eq!(&stored[0], sent);
}

#[tokio::test]
async fn a_model_without_images_refuses_a_prompt_with_images_before_any_call() {
    let h = harness(Scripted::new(vec![Ok(text("never"))]), |b| b);
    let (outcome, _) = h.run(with_image("what is this?")).await;
    assert_eq!(outcome.reason, StopReason::HarnessError);
    let error = outcome.error.unwrap_or_default();
    assert!(error.contains("does not take images"), "{error}");
    assert!(h.provider.requests().is_empty());
}

#[test]
fn an_image_in_the_users_message_counts_at_its_estimate() {
    let counter = CalibratedEstimator::default();
    let plain = count_message(&counter, &Message::user("look"));
    let with = count_message(
        &counter,
        &Message::user_with_images("look", vec![png(), png()]),
    );
    assert_eq!(with, plain + 2 * Image::ESTIMATED_TOKENS);
}
