--- Review tab: a changeset file by file as a native side-by-side diff, original | proposed.
---
--- Nothing is applied here: the buffers are read-only scratch copies of the changeset's texts.
--- Each hunk carries its status (pending / accepted / rejected) at its first changed line; the
--- hunk, file or changeset under the cursor is what :AgenticAccept / :AgenticReject decide on.
local client = require('agentic_lsp.client')
local config = require('agentic_lsp.config')

local M = {}

local ns = vim.api.nvim_create_namespace('agentic_lsp_diff')

---@class agentic_lsp.DiffView
---@field id string changeset id
---@field changeset table showChangeset result
---@field index integer file shown (1-based)
---@field tab integer
---@field wins integer[] { original, proposed }
---@field bufs integer[]

---@type table<integer, agentic_lsp.DiffView> tabpage -> view
M.views = {}

local HL = { pending = 'AgenticHunkPending', accepted = 'AgenticHunkAccepted', rejected = 'AgenticHunkRejected' }
vim.api.nvim_set_hl(0, HL.pending, { link = 'DiagnosticHint', default = true })
vim.api.nvim_set_hl(0, HL.accepted, { link = 'DiagnosticOk', default = true })
vim.api.nvim_set_hl(0, HL.rejected, { link = 'DiagnosticError', default = true })

local function text_lines(text)
  if type(text) ~= 'string' or text == '' then
    return {}
  end
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  for i, line in ipairs(lines) do
    lines[i] = (line:gsub('\r$', ''))
  end
  return lines
end

--- 0-based `[start, end)` line spans of a hunk on both sides: `core` without the context lines,
--- `full` with them.
function M.hunk_spans(hunk)
  local lines = hunk.lines or {}
  local lead, trail = 0, 0
  while lead < #lines and lines[lead + 1]:sub(1, 1) == ' ' do
    lead = lead + 1
  end
  while trail < #lines - lead and lines[#lines - trail]:sub(1, 1) == ' ' do
    trail = trail + 1
  end
  local o, p = hunk.originalStart, hunk.proposedStart
  return {
    core = {
      original = { o + lead, o + hunk.originalLen - trail },
      proposed = { p + lead, p + hunk.proposedLen - trail },
    },
    full = {
      original = { o, o + hunk.originalLen },
      proposed = { p, p + hunk.proposedLen },
    },
  }
end

local function covers(span, line)
  local s, e = span[1], span[2]
  if e <= s then -- a pure insertion or deletion point: the lines on either side of it
    return line == s or line == math.max(s - 1, 0)
  end
  return line >= s and line < e
end

--- The hunk of `file` at 0-based `line` of `side` ('original' | 'proposed'), if any.
function M.hunk_at(file, side, line)
  for _, kind in ipairs({ 'core', 'full' }) do
    for _, hunk in ipairs(file.hunks or {}) do
      if covers(M.hunk_spans(hunk)[kind][side], line) then
        return hunk
      end
    end
  end
  return nil
end

local function escape_bar(text)
  return (tostring(text):gsub('%%', '%%%%'))
end

local function forget_closed()
  for tab in pairs(M.views) do
    if not vim.api.nvim_tabpage_is_valid(tab) then
      M.views[tab] = nil
    end
  end
end

--- The view of the current tab, if it is a review tab.
---@return agentic_lsp.DiffView?
function M.current()
  forget_closed()
  return M.views[vim.api.nvim_get_current_tabpage()]
end

local function scratch(name, lines, path)
  local old = vim.fn.bufnr('^' .. vim.fn.escape(name, '\\/.*$^~[]') .. '$')
  if old > 0 then
    pcall(vim.api.nvim_buf_delete, old, { force = true })
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local ft = vim.filetype.match({ filename = path, buf = buf })
  if ft then
    vim.bo[buf].filetype = ft
  end
  return buf
end

-- Invisible and bidirectional control characters (Trojan Source): shown, never hidden.
local CONTROLS = vim.regex(
  '[\\u202a-\\u202e\\u2066-\\u2069\\u200b-\\u200f\\u2060\\ufeff]'
)
local controls_ns = vim.api.nvim_create_namespace('agentic_lsp_controls')

--- Mark every invisible or bidirectional control character in `buf` with a visible
--- `<U+XXXX>` label and an error highlight; returns how many were marked.
---@param buf integer
---@return integer
function M.mark_controls(buf)
  vim.api.nvim_buf_clear_namespace(buf, controls_ns, 0, -1)
  local count = 0
  for row, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local from = 0
    while from < #line do
      local s, e = CONTROLS:match_str(line:sub(from + 1))
      if not s then
        break
      end
      local col = from + s
      local char = line:sub(col + 1, from + e)
      vim.api.nvim_buf_set_extmark(buf, controls_ns, row - 1, col, {
        end_col = from + e,
        hl_group = 'ErrorMsg',
        virt_text = { { ('<U+%04X>'):format(vim.fn.char2nr(char)), 'ErrorMsg' } },
        virt_text_pos = 'inline',
      })
      count = count + 1
      from = from + e
    end
  end
  return count
end

local function mark_hunks(view, file)
  for side, buf in pairs({ original = view.bufs[1], proposed = view.bufs[2] }) do
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    local count = vim.api.nvim_buf_line_count(buf)
    for _, hunk in ipairs(file.hunks or {}) do
      local span = M.hunk_spans(hunk).core[side]
      local row = math.max(math.min(span[1], count - 1), 0)
      local label = (' change %d: %s '):format(hunk.index, hunk.status)
      vim.api.nvim_buf_set_extmark(buf, ns, row, 0, {
        virt_text = { { label, HL[hunk.status] or HL.pending } },
        virt_text_pos = 'eol',
      })
    end
  end
end

local function set_keymaps(view, buf)
  local keys = config.options.diff.keymaps or {}
  local review = function()
    return require('agentic_lsp.review')
  end
  local actions = {
    accept_hunk = function()
      review().decide_here('accept', 'hunk')
    end,
    reject_hunk = function()
      review().decide_here('reject', 'hunk')
    end,
    accept_file = function()
      review().decide_here('accept', 'file')
    end,
    reject_file = function()
      review().decide_here('reject', 'file')
    end,
    next_file = function()
      M.step(1)
    end,
    prev_file = function()
      M.step(-1)
    end,
    close = function()
      M.close(view)
    end,
  }
  for action, fn in pairs(actions) do
    if keys[action] then
      vim.keymap.set(
        'n',
        keys[action],
        fn,
        { buffer = buf, nowait = true, desc = 'agentic-lsp: ' .. action:gsub('_', ' ') }
      )
    end
  end
end

local function render(view)
  local cs = view.changeset
  local file = cs.files[view.index]
  local new_path = file.newPath ~= vim.NIL and file.newPath or nil
  local left_lines = file.op == 'create' and {} or text_lines(file.original)
  local right_lines = file.op == 'delete' and {} or text_lines(file.proposed)
  local texts = { left_lines, right_lines }
  if
    view.shown == view.index
    and view.bufs
    and vim.api.nvim_buf_is_valid(view.bufs[1])
    and vim.api.nvim_buf_is_valid(view.bufs[2])
  then
    for i, buf in ipairs(view.bufs) do -- same file: new texts in place, windows and cursors stay
      vim.bo[buf].modifiable = true
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, texts[i])
      vim.bo[buf].modifiable = false
      vim.bo[buf].modified = false
    end
    vim.api.nvim_win_call(view.wins[1], function()
      vim.cmd('diffupdate')
    end)
  else
    local base = ('agentic-lsp://%s/%d/'):format(view.id, view.index)
    local old_bufs = view.bufs or {}
    view.bufs = {
      scratch(base .. 'original/' .. file.path, left_lines, file.path),
      scratch(base .. 'proposed/' .. (new_path or file.path), right_lines, new_path or file.path),
    }
    for i, win in ipairs(view.wins) do
      vim.api.nvim_win_call(win, function()
        vim.cmd('diffoff')
      end)
      vim.api.nvim_win_set_buf(win, view.bufs[i])
    end
    for _, buf in ipairs(old_bufs) do
      if vim.api.nvim_buf_is_valid(buf) then
        pcall(vim.api.nvim_buf_delete, buf, { force = true })
      end
    end
    for _, win in ipairs(view.wins) do
      vim.api.nvim_win_call(win, function()
        vim.cmd('diffthis')
      end)
    end
    view.shown = view.index
  end
  local position = ('[%d/%d]'):format(view.index, #cs.files)
  local stale = file.stale and ' ⚠ stale: :AgenticRefresh' or ''
  local flags = type(file.flags) == 'table' and #file.flags > 0
      and (' ⚠ ' .. table.concat(file.flags, ', '))
    or ''
  vim.wo[view.wins[1]].winbar = escape_bar(('original  %s  (%s)'):format(file.path, file.op))
  vim.wo[view.wins[2]].winbar = escape_bar(
    ('proposed  %s  %s %s · %s — %s%s%s'):format(
      new_path or file.path,
      position,
      cs.id,
      file.status,
      cs.title or '',
      stale,
      flags
    )
  )
  mark_hunks(view, file)
  for _, buf in ipairs(view.bufs) do
    M.mark_controls(buf)
  end
  for _, buf in ipairs(view.bufs) do
    vim.b[buf].agentic_lsp_changeset = cs.id
    set_keymaps(view, buf)
  end
end

local function file_index(changeset, path)
  for i, file in ipairs(changeset.files or {}) do
    if file.path == path or file.newPath == path then
      return i
    end
  end
  return 1
end

local function find_view(id)
  forget_closed()
  for _, view in pairs(M.views) do
    if view.id == id then
      return view
    end
  end
  return nil
end

local function show(changeset, path)
  if not changeset.files or #changeset.files == 0 then
    local message = 'agentic-lsp: changeset ' .. changeset.id .. ' has no files'
    require('agentic_lsp.events').notify(message, vim.log.levels.WARN)
    return
  end
  local view = find_view(changeset.id)
  if view then
    vim.api.nvim_set_current_tabpage(view.tab)
  else
    vim.cmd('tabnew')
    local blank = vim.api.nvim_get_current_buf()
    local tab = vim.api.nvim_get_current_tabpage()
    local left = vim.api.nvim_get_current_win()
    vim.cmd('rightbelow vsplit')
    local right = vim.api.nvim_get_current_win()
    view = { id = changeset.id, tab = tab, wins = { left, right } }
    M.views[tab] = view
    view.changeset, view.index = changeset, file_index(changeset, path)
    render(view)
    if vim.api.nvim_buf_is_valid(blank) and vim.api.nvim_buf_get_name(blank) == '' then
      pcall(vim.api.nvim_buf_delete, blank, { force = true })
    end
    vim.api.nvim_set_current_win(right)
    return view
  end
  view.changeset = changeset
  view.index = path and file_index(changeset, path) or math.min(view.index, #changeset.files)
  render(view)
  return view
end

--- Open (or switch to) the review tab of changeset `id`; `opts.path` picks the file shown first;
--- `opts.on_open(view)` runs once it is shown.
---@param id string
---@param opts? {path?: string, on_open?: fun(view: agentic_lsp.DiffView)}
function M.open(id, opts)
  opts = opts or {}
  client.execute('showChangeset', { changesetId = id }, function(err, changeset)
    if err then
      require('agentic_lsp.events').notify('agentic-lsp: ' .. err, vim.log.levels.ERROR)
      return
    end
    local view = show(changeset, opts.path)
    if view and opts.on_open then
      opts.on_open(view)
    end
  end)
end

--- Re-read the changeset of `view` and show it again, keeping the cursor.
function M.refresh(view, done)
  client.execute('showChangeset', { changesetId = view.id }, function(err, changeset)
    if err or not vim.api.nvim_tabpage_is_valid(view.tab) then
      if done then
        done(err)
      end
      return
    end
    local cursors = {}
    for i, win in ipairs(view.wins) do
      if vim.api.nvim_win_is_valid(win) then
        cursors[i] = vim.api.nvim_win_get_cursor(win)
      end
    end
    view.changeset = changeset
    view.index = math.min(view.index, #changeset.files)
    render(view)
    for i, cursor in pairs(cursors) do
      local count = vim.api.nvim_buf_line_count(view.bufs[i])
      pcall(vim.api.nvim_win_set_cursor, view.wins[i], { math.min(cursor[1], count), cursor[2] })
    end
    if done then
      done(nil)
    end
  end)
end

--- A changeset changed on the server: views of it (all views when `id` is nil) follow.
function M.changed(id)
  forget_closed()
  for _, view in pairs(M.views) do
    if id == nil or view.id == id then
      M.refresh(view)
    end
  end
end

--- Show the next (`delta` = 1) or previous file of the current view.
function M.step(delta)
  local view = M.current()
  if not view then
    return
  end
  local count = #view.changeset.files
  view.index = (view.index - 1 + delta) % count + 1
  render(view)
end

function M.close(view)
  view = view or M.current()
  if not view then
    return
  end
  M.views[view.tab] = nil
  if not vim.api.nvim_tabpage_is_valid(view.tab) then
    return
  end
  if #vim.api.nvim_list_tabpages() > 1 then
    vim.cmd('tabclose ' .. vim.api.nvim_tabpage_get_number(view.tab))
    return
  end
  vim.cmd('diffoff!') -- the last tab: leave one empty window instead
  vim.api.nvim_set_current_win(view.wins[1])
  vim.cmd('only')
  vim.cmd('enew')
  vim.wo.winbar = ''
end

--- What the cursor designates in the current review tab, as a decision argument:
--- 'hunk' → {changesetId, path, hunks = {i}}, 'file' → {changesetId, path}, 'all' → {changesetId}.
---@return table? arg, string? err
function M.selection(scope)
  local view = M.current()
  if not view then
    return nil, nil
  end
  local file = view.changeset.files[view.index]
  if scope == 'all' then
    return { changesetId = view.id }
  end
  if scope == 'file' then
    return { changesetId = view.id, path = file.path }
  end
  local win = vim.api.nvim_get_current_win()
  local side = win == view.wins[1] and 'original' or win == view.wins[2] and 'proposed' or nil
  if not side then
    return nil, 'put the cursor in the original or proposed window'
  end
  local line = vim.api.nvim_win_get_cursor(win)[1] - 1
  local hunk = M.hunk_at(file, side, line)
  if not hunk then
    return nil, ('no change of %s at line %d (use ]c / [c to move between changes)'):format(file.path, line + 1)
  end
  return { changesetId = view.id, path = file.path, hunks = { hunk.index } }
end

return M
