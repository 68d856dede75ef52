// Progressive enhancement only: every page works without this file.
'use strict';

// Copy buttons, shown where the Clipboard API exists: each copies the text of the element its data-copy names.
for (const button of document.querySelectorAll('button.copy')) {
  if (!navigator.clipboard) continue;
  const label = button.textContent;
  button.hidden = false;
  button.addEventListener('click', () => {
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    navigator.clipboard.writeText(source.textContent).then(() => {
      button.textContent = button.dataset.copied;
      setTimeout(() => (button.textContent = label), 2000);
    });
  });
}

// Forms that ask before they act (revoking a key).
for (const form of document.querySelectorAll('form[data-confirm]')) {
  form.addEventListener('submit', (event) => {
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
}
