-- hakaru's side of wrk's scripting API, run in every Lua state before the user's script.
-- The target's fields come in as arguments; wrk.lookup and wrk.connect are set from Rust before this runs.
local scheme, host, port, method, path, body, names, values = ...
local lower, concat, tostring = string.lower, table.concat, tostring

-- Text chunks only, wherever code is loaded: LuaJIT does not check bytecode, and crafted bytecode (string.dump's
-- output, edited) can crash the process.
do
   local load_, loadfile_, error, searchpath = load, loadfile, error, package.searchpath
   local function said(f, why)
      if f == nil and type(why) == "string" and why:find("wrong mode", 1, true) then
         why = "bytecode is refused: hakaru loads Lua source only (" .. why .. ")"
      end
      return f, why
   end
   function load(chunk, name, _, env) return said(load_(chunk, name, "t", env)) end
   function loadstring(s, name) return said(load_(s, name, "t")) end
   function loadfile(file, _, env) return said(loadfile_(file, "t", env)) end
   function dofile(file)
      local f, why = said(loadfile_(file, "t"))
      if not f then error(why, 2) end
      return f()
   end
   -- require's Lua searcher, text only as well.
   package.loaders[2] = function(name)
      local path, err = searchpath(name, package.path)
      if not path then return err end
      local f, why = said(loadfile_(path, "t"))
      if not f then error("module '" .. name .. "': " .. why, 2) end
      return f
   end
end

-- Header names are kept lower-cased, so that "Host" and "host" are one header (HTTP names ignore case).
local by_lower = {
   __newindex = function(t, k, v) rawset(t, lower(k), v) end,
   __index = function(t, k) return rawget(t, lower(k)) end,
}

wrk.scheme  = scheme
wrk.host    = host
wrk.port    = port
wrk.method  = method
wrk.path    = path
wrk.body    = body
wrk.headers = setmetatable({}, by_lower)
for i = 1, #names do wrk.headers[names[i]] = values[i] end

-- Request text from the given parts, each defaulting to the wrk table's; Content-Length is the body's.
function wrk.format(m, p, h, b)
   m = m or wrk.method
   p = p or wrk.path
   h = h or wrk.headers
   b = b or wrk.body
   local out = { m .. " " .. p .. " HTTP/1.1" }
   local host_given = false
   for name, value in pairs(h) do
      local l = lower(name)
      if l == "host" then host_given = true end
      if l ~= "content-length" then out[#out + 1] = name .. ": " .. tostring(value) end
   end
   if not host_given and wrk.headers.host then out[#out + 1] = "Host: " .. wrk.headers.host end
   if b then out[#out + 1] = "Content-Length: " .. #b end
   out[#out + 1] = ""
   out[#out + 1] = b or ""
   return concat(out, "\r\n")
end

-- A load thread's start: the Host header unless the script set one, the script's init(args), and the fixed
-- request that wrk.request() returns.
function wrk.init(args)
   if not wrk.headers.host then
      local h = wrk.host
      if h:find(":", 1, true) then h = "[" .. h .. "]" end
      if wrk.port then h = h .. ":" .. wrk.port end
      wrk.headers.host = h
   end
   if type(init) == "function" then init(args) end
   local fixed = wrk.format()
   wrk.request = function() return fixed end
end
