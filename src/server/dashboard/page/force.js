// Force release: the button on each row opens a dialog that asks for an
// admin token (unless the server has none), sends it with that one DELETE
// and says how it went in a toast. The token is not kept.
import { api, lockPath } from './api.js'
import { wantDetail } from './details.js'
import { $, state } from './state.js'

function toast(text, bad) {
  const node = $('toast')
  node.textContent = text
  node.className = bad ? 'bad' : ''
  node.hidden = false
  clearTimeout(toast.timer)
  toast.timer = setTimeout(() => (node.hidden = true), 5_000)
}

export function setupForceRelease() {
  const dialog = $('force')
  $('locks').addEventListener('click', (event) => {
    const button = event.target.closest('button.force')
    if (!button) return
    dialog.dataset.name = button.dataset.name
    $('force-name').textContent = button.dataset.name
    $('force-token').value = ''
    $('force-auth').hidden = state.open
    $('force-open').hidden = !state.open
    dialog.showModal()
  })
  dialog.addEventListener('close', async () => {
    const input = $('force-token')
    const token = input.value.trim()
    input.value = ''
    if (dialog.returnValue !== 'go') return
    const name = dialog.dataset.name
    try {
      const result = await api(lockPath(name), { method: 'DELETE' }, token || undefined)
      toast(result?.released ? `Released "${name}": its holders lost it.` : `"${name}" was not held.`)
      wantDetail([name])
    } catch (error) {
      toast(`Refused: ${error.message}`, true)
    }
  })
}
