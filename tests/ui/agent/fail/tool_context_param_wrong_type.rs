use agent_core::agent;

struct User {
    name: String,
}

struct Account;

struct Desk;

#[agent(context = User)]
impl Desk {
    /// The name of the user asking.
    #[tool]
    fn whoami(&self, account: &Account) -> String {
        let _ = account;
        String::new()
    }
}

fn main() {
    let _ = |user: User| user.name;
}
