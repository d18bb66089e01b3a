// Sign in: the token and the CSRF cookie's value (double submit) are posted as a form. With fetch the
// page can say "wrong token" in place; the server's 303 to / (session cookie set) is followed.
import { cookie } from "./api.js";

const form = document.getElementById("login-form");
const error = document.getElementById("login-error");
const csrf = document.getElementById("csrf");

function showError(message) {
  error.textContent = message;
  error.hidden = false;
}

csrf.value = cookie("harvestman_csrf");

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  error.hidden = true;
  csrf.value = cookie("harvestman_csrf");
  const body = new URLSearchParams(new FormData(form));
  let resp;
  try {
    resp = await fetch("/login", { method: "POST", body, credentials: "same-origin" });
  } catch (err) {
    showError(`The server did not answer (${err.message}).`);
    return;
  }
  if (resp.ok) {
    window.location.assign("/");
  } else if (resp.status === 401) {
    showError("Wrong token.");
    form.token.select();
  } else if (resp.status === 403) {
    // The CSRF cookie was missing or stale: a fresh GET /login sets a new one.
    showError("The sign-in form had expired; reload the page and try again.");
  } else {
    showError(`Sign-in failed: ${resp.status} ${resp.statusText}`);
  }
});
