//! The pump both streaming providers share: server-sent events read off the response as they
//! arrive, handed one by one to the provider's own decoder, and what it decodes passed on as
//! stream events; a transport error or a decoding error ends the stream with that error.

use eventsource_stream::Eventsource;
use futures_util::{StreamExt, stream};

use super::{EventStream, LlmError, StreamEvent};

/// What a provider makes of the events of one answer.
pub trait Decoder: Send + 'static {
    /// Decodes one event (its `event:` name, empty when none, and its `data:`), appending
    /// what it means to `out`.
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<StreamEvent>)
    -> Result<(), LlmError>;

    /// Whether the provider has said the answer is over.
    fn finished(&self) -> bool;

    /// The answer is over (said so, or the stream ended): adds what is still pending, or
    /// says the answer broke off.
    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
}

/// The events of `response`'s body, decoded by `decoder`.
pub fn pump<D: Decoder>(
    provider: &'static str,
    response: reqwest::Response,
    decoder: D,
) -> EventStream {
    let events = response.bytes_stream().eventsource();
    let state = (
        events,
        decoder,
        Vec::<StreamEvent>::new().into_iter(),
        false,
    );
    let stream = stream::unfold(
        state,
        move |(mut events, mut decoder, mut pending, mut finished)| async move {
            loop {
                if let Some(event) = pending.next() {
                    return Some((Ok(event), (events, decoder, pending, finished)));
                }
                if finished {
                    return None;
                }
                let mut out = Vec::new();
                let step = match events.next().await {
                    Some(Ok(event)) => {
                        let decoded = decoder.event(&event.event, &event.data, &mut out);
                        if decoded.is_ok() && decoder.finished() {
                            finished = true;
                            decoder.end(&mut out)
                        } else {
                            decoded
                        }
                    }
                    Some(Err(e)) => Err(LlmError::Transport {
                        provider,
                        message: super::error_chain(&e),
                    }),
                    None => {
                        finished = true;
                        decoder.end(&mut out)
                    }
                };
                if let Err(e) = step {
                    finished = true;
                    return Some((Err(e), (events, decoder, pending, finished)));
                }
                pending = out.into_iter();
            }
        },
    );
    Box::pin(stream)
}
