// Progressive enhancement only: every page works without this script.
// - the diagnose form shows upload progress (XMLHttpRequest) and follows the redirect;
// - "Copy" buttons copy a command.
"use strict";

function enhanceUpload() {
  const form = document.getElementById("diagnose-form");
  if (!form || !window.FormData) return;
  const box = document.getElementById("upload-progress");
  const bar = document.getElementById("upload-bar");
  const status = document.getElementById("upload-status");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const limit = Number(form.dataset.limitBytes);
    const files = Array.from(form.querySelector("input[type=file]").files);
    const size = files.reduce((total, file) => total + file.size, 0) + form.elements.log.value.length;
    box.hidden = false;
    status.classList.remove("error");
    if (limit && size > limit) {  // say it now rather than after sending it all
      status.textContent = `These logs are ${(size / 1048576).toFixed(0)} MB; the limit is ${limit / 1048576} MB. Run traintriage diagnose on your machine for bigger logs.`;
      status.classList.add("error");
      return;
    }
    const request = new XMLHttpRequest();
    request.open("POST", form.action);
    request.upload.addEventListener("progress", (progress) => {
      if (!progress.lengthComputable) return;
      const percent = Math.round((100 * progress.loaded) / progress.total);
      bar.value = percent;
      status.textContent = percent < 100 ? `${percent}% sent` : "Reading the log…";
    });
    request.addEventListener("load", () => {
      if (request.status === 200 && request.responseURL && !request.responseURL.endsWith("/diagnose")) {
        window.location.assign(request.responseURL);
        return;
      }
      const page = new DOMParser().parseFromString(request.responseText, "text/html");
      const error = page.getElementById("form-error") || page.querySelector(".error");
      status.textContent = error ? error.textContent : `The server answered ${request.status}.`;
      status.classList.add("error");
    });
    request.addEventListener("error", () => { status.textContent = "The upload failed: network error."; });
    status.textContent = "Sending…";
    request.send(new FormData(form));
  });
}

function enhanceCopy() {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    const target = document.getElementById(button.dataset.copy);
    if (!target || !navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(target.textContent.trim());
        button.textContent = "Copied";
      } catch (_) {
        button.textContent = "Select and copy";
      }
    });
  }
}

document.addEventListener("DOMContentLoaded", () => { enhanceUpload(); enhanceCopy(); });
