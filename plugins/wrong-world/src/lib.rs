//! Test fixture: a well-formed component that targets some other world, so
//! the host must refuse it as a prompt pack.

wit_bindgen::generate!({ path: "wit", world: "greeter" });

struct Greeter;

impl exports::fixture::greeter::greet::Guest for Greeter {
    fn greet(name: String) -> String {
        format!("Hello, {name}!")
    }
}

export!(Greeter);
